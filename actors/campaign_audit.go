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
	// Violations name each user seen holding two live purchases of the
	// campaign at one moment (campaign scope only).
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
// campaign scope, counts each user's live purchases over its SKUs. The
// SKUs are frozen one after another, not at one instant, so a user seen
// live on two (a cancel on one, then a reserve on the other, between the
// freezes) is read again: the reservations are read in turn, and a
// violation is reported only when two of them are still live at their
// reads (each was live before the first read and still is at its own, so
// both were at the first read's instant). Errors: ErrUnknownSKU (no SKU of
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
	for _, h := range hs {
		c, err := e.runOn(ctx, h, newReportCall(core.KindAudit))
		if err != nil {
			return CampaignAudit{}, fmt.Errorf("%s/%s: %w", campaignID, h.skuID, err)
		}
		live = append(live, c.Report.Frozen.LivePurchases())
		c.free()
	}
	overlaps, users := purchase.Overlaps(live)
	out.LiveUsers = users
	if out.PurchaseLimit != sku.PurchaseLimitCampaign {
		return out, nil
	}
	for user, ids := range overlaps {
		var still []string
		for _, id := range ids {
			v, err := e.Get(ctx, id)
			if err != nil {
				return CampaignAudit{}, err
			}
			if v.State == sku.StatePendingPayment || v.State == sku.StatePaid {
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

// OverlapViolation is the violation text for a user holding the live
// purchases ids in one campaign-scope campaign.
func OverlapViolation(userID string, ids []string) string {
	return fmt.Sprintf("user %s holds %d live purchases in a campaign whose purchase_limit is \"campaign\": %v", userID, len(ids), ids)
}
