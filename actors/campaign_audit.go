package actors

import (
	"context"
	"fmt"
	"sort"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/purchase"
	"github.com/seckill/seckill/actors/sku"
)

// CampaignAudit is the audit of every SKU of a campaign and, for a
// campaign whose purchase_limit is "campaign", of the rule that spans
// them: at most one live purchase per user over all its SKUs.
type CampaignAudit struct {
	CampaignID    string
	PurchaseLimit sku.PurchaseLimit
	// SKUs are the audits of the campaign's SKUs (Engine.Audit), by id.
	SKUs []SKUAudit
	// LiveUsers counts the users holding a live purchase (PENDING_PAYMENT
	// or PAID) in the campaign, as of the SKUs' freezes: with campaign
	// scope, the live purchases must number the same.
	LiveUsers int
	// Violations name each user seen holding two live purchases, or a
	// purchase and a lottery entry that may still win, or two such entries,
	// of the campaign at one moment (campaign scope only).
	Violations []string
}

// SKUAudit is one SKU's audit in a CampaignAudit.
type SKUAudit struct {
	SKUID string
	Audit sku.Audit
}

// OK reports whether every SKU's audit and the campaign's rule hold.
func (a CampaignAudit) OK() bool {
	for _, s := range a.SKUs {
		if !s.Audit.OK() {
			return false
		}
	}
	return len(a.Violations) == 0
}

// CampaignAudit audits every SKU of a campaign (Engine.Audit) and, with
// campaign scope, counts each user's holds over its SKUs: live purchases
// and lottery entries that may still win (purchase.Holds). The SKUs are
// frozen one after another, not at one instant, so a user seen holding on
// two (a cancel on one, then a reserve on the other, between the freezes)
// is read again: the holds are read in turn, and a violation is reported
// only when two of them still hold at their reads (each held before the
// first read and still does at its own, and a hold that ended never comes
// back, so both held at the first read's instant). Errors: ErrUnknownSKU (no SKU of
// that campaign), and those of Engine.Audit and Engine.Get.
func (e *Engine) CampaignAudit(ctx context.Context, campaignID string) (CampaignAudit, error) {
	var hs []*SKU
	for _, h := range e.SKUs() {
		if h.campaignID == campaignID && h.defined() {
			hs = append(hs, h)
		}
	}
	if len(hs) == 0 {
		return CampaignAudit{}, ErrUnknownSKU
	}
	out := CampaignAudit{CampaignID: campaignID}
	for _, h := range hs {
		a, err := e.Audit(ctx, campaignID, h.skuID)
		if err != nil {
			return CampaignAudit{}, fmt.Errorf("%s/%s: %w", campaignID, h.skuID, err)
		}
		out.SKUs = append(out.SKUs, SKUAudit{SKUID: h.skuID, Audit: a})
		if h.campaignScoped() {
			out.PurchaseLimit = sku.PurchaseLimitCampaign
		}
	}
	live := make([]map[string]string, 0, len(hs))
	holds := make([]map[string]string, 0, len(hs))
	for _, h := range hs {
		c, err := e.runOn(ctx, h, newReportCall(core.KindAudit))
		if err != nil {
			return CampaignAudit{}, fmt.Errorf("%s/%s: %w", campaignID, h.skuID, err)
		}
		f := c.Report.Frozen
		live = append(live, f.LivePurchases())
		holds = append(holds, purchase.Holds(h.skuID, live[len(live)-1], f.LiveEntries()))
		c.free()
	}
	out.LiveUsers = purchase.Users(live)
	if out.PurchaseLimit != sku.PurchaseLimitCampaign {
		return out, nil
	}
	for user, ids := range purchase.Overlaps(holds) {
		var still []string
		for _, id := range ids {
			holding, err := e.stillHolds(ctx, campaignID, id)
			if err != nil {
				return CampaignAudit{}, err
			}
			if holding {
				still = append(still, id)
			}
		}
		if len(still) > 1 {
			out.Violations = append(out.Violations, OverlapViolation(user, still))
		}
	}
	sort.Strings(out.Violations)
	return out, nil
}

// stillHolds reads a hold again (purchase.Holds' id): a live purchase, or
// a lottery entry that may still win.
func (e *Engine) stillHolds(ctx context.Context, campaignID, id string) (bool, error) {
	if skuID, requestID, ok := purchase.ParseEntryHold(id); ok {
		v, err := e.Entry(ctx, campaignID, skuID, requestID)
		if err != nil {
			return false, err
		}
		return v.Status == sku.EntryEntered || v.Status == sku.EntryWaitlisted, nil
	}
	v, err := e.Get(ctx, id)
	if err != nil {
		return false, err
	}
	return v.State == sku.StatePendingPayment || v.State == sku.StatePaid, nil
}

// OverlapViolation is the violation text for a user holding the holds ids
// (live purchases by reservation id, lottery entries that may still win
// as purchase.EntryHold) in one campaign-scope campaign.
func OverlapViolation(userID string, ids []string) string {
	return fmt.Sprintf("user %s holds %d live purchases or lottery entries that may still win in a campaign whose purchase_limit is \"campaign\": %v", userID, len(ids), ids)
}
