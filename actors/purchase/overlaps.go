package purchase

import "strings"

// A campaign's audits (actors.Engine.CampaignAudit, seckillctl verify)
// read each SKU's holds: its live purchases (PENDING_PAYMENT
// or PAID, sku.Machine.LivePurchases) by reservation id, and on a lottery
// SKU its entries that may still win (ENTERED, WAITLISTED,
// sku.Machine.LiveEntries) by EntryHold. With purchase_limit "campaign" a
// user holds at most one of them over the campaign's SKUs.

// entryHoldPrefix starts an EntryHold; no reservation id starts with it (a
// space is never in an id).
const entryHoldPrefix = "entry "

// EntryHold names a lottery entry among a user's holds: "entry
// <sku_id>/<request_id>".
func EntryHold(skuID, requestID string) string {
	return entryHoldPrefix + skuID + "/" + requestID
}

// ParseEntryHold reads an EntryHold; ok is false for a reservation id.
func ParseEntryHold(id string) (skuID, requestID string, ok bool) {
	rest, ok := strings.CutPrefix(id, entryHoldPrefix)
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, "/")
}

// Holds returns SKU skuID's holds by user: live (user -> reservation id)
// and entries (user -> request_id of an entry that may still win, as
// EntryHold ids). A SKU never holds both for one user: a lottery's win is
// its reservation, and the entry no longer counts.
func Holds(skuID string, live, entries map[string]string) map[string]string {
	out := make(map[string]string, len(live)+len(entries))
	for user, id := range live {
		out[user] = id
	}
	for user, request := range entries {
		out[user] = EntryHold(skuID, request)
	}
	return out
}

// Overlaps returns the users holding more than one hold over a campaign's
// SKUs, with their hold ids in the order of holds (one map per SKU, as
// Holds makes them). With purchase_limit "campaign" it must be empty.
func Overlaps(holds []map[string]string) map[string][]string {
	byUser := make(map[string][]string)
	for _, m := range holds {
		for user, id := range m {
			byUser[user] = append(byUser[user], id)
		}
	}
	var overlaps map[string][]string
	for user, ids := range byUser {
		if len(ids) > 1 {
			if overlaps == nil {
				overlaps = make(map[string][]string)
			}
			overlaps[user] = ids
		}
	}
	return overlaps
}

// Users counts the distinct users of live (one map per SKU): the
// audits' live_users, the users holding a live purchase.
func Users(live []map[string]string) int {
	seen := make(map[string]struct{})
	for _, m := range live {
		for user := range m {
			seen[user] = struct{}{}
		}
	}
	return len(seen)
}
