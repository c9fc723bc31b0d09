package httpapi

import (
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/timefmt"
	"github.com/valyala/fasthttp"
)

// campaignBody is a campaign as GET /admin/campaigns/{c} shows it: every
// SKU the engine holds under the campaign id, each with its durable
// definition (the fields of the PUT body, which later PUTs may have
// changed SKU by SKU) and whether it is paused.
type campaignBody struct {
	CampaignID string `json:"campaign_id"`
	// PurchaseLimit is "sku" or "campaign", the same for every SKU.
	PurchaseLimit string        `json:"purchase_limit"`
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
		c.SKUs = append(c.SKUs, campaignSKU{
			SKUID: st.SKUID, SaleLimit: d.SaleLimit,
			StartAt: timefmt.Millis(d.StartAt), EndAt: timefmt.Millis(d.EndAt),
			PaymentWindow:  (time.Duration(d.PaymentWindowMs) * time.Millisecond).String(),
			ReleaseOnClose: d.ReleaseOnClose, Paused: st.Paused,
		})
		if d.Lottery != nil {
			c.SKUs[len(c.SKUs)-1].Allocation = AllocationLottery
		}
	}
	return out
}

// handleCampaign is GET /admin/campaigns/{c}: 404 when the engine holds
// no SKU of the campaign.
func (s *Server) handleCampaign(ctx *fasthttp.RequestCtx) string {
	campaignID := pathParam(ctx, "campaign_id")
	if !sku.ValidID(campaignID) {
		return write(ctx, badPathID(ctx))
	}
	cs := campaignsOf(s.engine.AllStats(), campaignID)
	if len(cs) == 0 {
		return write(ctx, errorReply(fasthttp.StatusNotFound, reasonNotFound, "no such campaign"))
	}
	return write(ctx, jsonReply(fasthttp.StatusOK, outcomeOK, cs[0]))
}

// handleCampaigns is GET /admin/campaigns: every campaign and its SKUs
// (at most the engine's MaxSKUs SKUs in all).
func (s *Server) handleCampaigns(ctx *fasthttp.RequestCtx) string {
	body := campaignsBody{Campaigns: campaignsOf(s.engine.AllStats(), "")}
	if body.Campaigns == nil {
		body.Campaigns = []campaignBody{}
	}
	return write(ctx, jsonReply(fasthttp.StatusOK, outcomeOK, body))
}
