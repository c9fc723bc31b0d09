package purchase

// Overlaps returns the users holding a live purchase on more than one SKU
// of a campaign, with their reservation ids in the order of live, given
// each SKU's live purchases (user -> reservation id,
// sku.Machine.LivePurchases); and users, how many users hold one at all.
// With purchase_limit "campaign" overlaps must be empty: the audits'
// check (actors.Engine.CampaignAudit, seckillctl verify).
func Overlaps(live []map[string]string) (overlaps map[string][]string, users int) {
	byUser := make(map[string][]string)
	for _, m := range live {
		for user, id := range m {
			byUser[user] = append(byUser[user], id)
		}
	}
	for user, ids := range byUser {
		if len(ids) > 1 {
			if overlaps == nil {
				overlaps = make(map[string][]string)
			}
			overlaps[user] = ids
		}
	}
	return overlaps, len(byUser)
}
