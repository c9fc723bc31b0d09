package purchase

import "github.com/seckill/seckill/actors/sku"

// HeldResult is the answer to a reserve of userID in campaign campaignID
// whose claim is Held by d, when the SKU asked had not decided its
// request_id before (then its one result again: sku.KnownRequest):
// ALREADY_PURCHASED naming the live reservation, or ALREADY_ENTERED naming
// the lottery entry that may still win. Neither is recorded.
func HeldResult(d Decision, campaignID, userID string) sku.Result {
	if d.EntryRequestID != "" {
		return sku.Result{Outcome: sku.OutcomeAlreadyEntered, Reservation: sku.View{UserID: userID},
			Entered: sku.EntryRef{CampaignID: campaignID, SKUID: d.SKU, RequestID: d.EntryRequestID}}
	}
	return sku.Result{Outcome: sku.OutcomeAlreadyPurchased, Reservation: sku.View{ReservationID: d.ReservationID, UserID: userID}}
}

// HeldEntryResult is HeldResult for a lottery entry, when the SKU asked
// had made no entry for its request_id before (then that entry again).
func HeldEntryResult(d Decision, campaignID, userID string) sku.EntryResult {
	r := HeldResult(d, campaignID, userID)
	return sku.EntryResult{Outcome: r.Outcome, Purchase: r.Reservation, Entered: r.Entered}
}
