package httpapi

import (
	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/timefmt"
	"github.com/valyala/fasthttp"
)

// campaignBody is a campaign as GET /admin/campaigns/{c} shows it and a
// PUT of it answers (campaignView): every SKU the engine holds under the
// campaign id, each with its durable definition (the fields of the PUT
// body, which later PUTs may have changed SKU by SKU; durations in their
// canonical text, timefmt.Duration: "1.5h" is "1h30m") and whether it is
// paused.
type campaignBody struct {
	CampaignID string `json:"campaign_id"`
	// PurchaseLimit is "sku" or "campaign", the same for every SKU.
	PurchaseLimit string `json:"purchase_limit"`
	// PartlyDefined is set while a definition of the campaign that an
	// error cut short after it began is kept for the next start, or one a
	// crash (a replica set's failover) cut short is being finished: SKUs
	// holds only what was defined so far; a repeat of the PUT (or the
	// next start, or FinishPending) finishes it.
	PartlyDefined bool          `json:"partly_defined,omitempty"`
	SKUs          []campaignSKU `json:"skus"`
}

// campaignSKU is one SKU of a campaignBody.
type campaignSKU struct {
	SKUID          string `json:"sku_id"`
	SaleLimit      uint32 `json:"sale_limit"`
	StartAt        string `json:"start_at"`
	EndAt          string `json:"end_at"`
	PaymentWindow  string `json:"payment_window"`
	ReleaseOnClose bool   `json:"release_on_close"`
	Paused         bool   `json:"paused"`
	// Allocation is "lottery" for a lottery SKU (its rules and evidence:
	// GET /v1/campaigns/{c}/skus/{s}/lottery); absent: first come, first
	// served.
	Allocation string `json:"allocation,omitempty"`
	// The entry-pass fields, each absent when not set: entry_pass,
	// max_unpaid_per_subject, payment_window_high_risk.
	EntryPass             *CampaignEntryPass `json:"entry_pass,omitempty"`
	MaxUnpaidPerSubject   uint32             `json:"max_unpaid_per_subject,omitempty"`
	PaymentWindowHighRisk string             `json:"payment_window_high_risk,omitempty"`
}

// campaignsBody answers GET /admin/campaigns: every campaign, sorted by id.
type campaignsBody struct {
	Campaigns []campaignBody `json:"campaigns"`
}

// campaignsOf groups stats (sorted by campaign and SKU id, as AllStats
// returns them) into campaigns; only campaignID's when it is not "".
func campaignsOf(stats []actors.Stats, campaignID string) []campaignBody {
	var out []campaignBody
	for _, st := range stats {
		if campaignID != "" && st.CampaignID != campaignID {
			continue
		}
		if len(out) == 0 || out[len(out)-1].CampaignID != st.CampaignID {
			out = append(out, campaignBody{CampaignID: st.CampaignID, PurchaseLimit: st.Definition.PurchaseLimit.String()})
		}
		d := st.Definition
		c := &out[len(out)-1]
		v := campaignSKU{
			SKUID: st.SKUID, SaleLimit: d.SaleLimit,
			StartAt: timefmt.Millis(d.StartAt), EndAt: timefmt.Millis(d.EndAt),
			PaymentWindow:  timefmt.Duration(d.PaymentWindowMs),
			ReleaseOnClose: d.ReleaseOnClose, Paused: st.Paused,
			MaxUnpaidPerSubject: d.MaxUnpaidPerSubject,
		}
		if d.Lottery != nil {
			v.Allocation = AllocationLottery
		}
		if d.EntryPass != (sku.EntryPassRule{}) {
			v.EntryPass = &CampaignEntryPass{Required: d.EntryPass.Required}
			if d.EntryPass.LeadMs != 0 {
				v.EntryPass.Lead = timefmt.Duration(d.EntryPass.LeadMs)
			}
			if d.EntryPass.TTLMs != 0 {
				v.EntryPass.TTL = timefmt.Duration(d.EntryPass.TTLMs)
			}
		}
		if d.PaymentWindowHighRiskMs != 0 {
			v.PaymentWindowHighRisk = timefmt.Duration(d.PaymentWindowHighRiskMs)
		}
		c.SKUs = append(c.SKUs, v)
	}
	return out
}

// campaignView is the campaign as GET /admin/campaigns/{c} shows it, the
// one rendering of a campaign: a PUT of it answers the same body. False
// when the engine holds no SKU of it.
func (s *Server) campaignView(campaignID string) (campaignBody, bool) {
	cs := campaignsOf(s.engine.AllStats(), campaignID)
	if len(cs) == 0 {
		return campaignBody{}, false
	}
	cs[0].PartlyDefined = s.engine.PartlyDefined(campaignID)
	return cs[0], true
}

// handleCampaign is GET /admin/campaigns/{c}: 404 when the engine holds
// no SKU of the campaign.
func (s *Server) handleCampaign(ctx *fasthttp.RequestCtx) string {
	campaignID := pathParam(ctx, "campaign_id")
	if !sku.ValidID(campaignID) {
		return write(ctx, badPathID(ctx))
	}
	view, ok := s.campaignView(campaignID)
	if !ok {
		return write(ctx, errorReply(reasonNotFound, "no such campaign"))
	}
	return write(ctx, jsonReply(fasthttp.StatusOK, outcomeOK, view))
}

// handleCampaigns is GET /admin/campaigns: every campaign and its SKUs
// (at most the engine's MaxSKUs SKUs in all).
func (s *Server) handleCampaigns(ctx *fasthttp.RequestCtx) string {
	body := campaignsBody{Campaigns: campaignsOf(s.engine.AllStats(), "")}
	if body.Campaigns == nil {
		body.Campaigns = []campaignBody{}
	}
	for i := range body.Campaigns {
		body.Campaigns[i].PartlyDefined = s.engine.PartlyDefined(body.Campaigns[i].CampaignID)
	}
	return write(ctx, jsonReply(fasthttp.StatusOK, outcomeOK, body))
}
