package httpapi

import (
	"strconv"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/admission"
	"github.com/seckill/seckill/internal/timefmt"
	"github.com/valyala/fasthttp"
)

// Coarse SKU statuses, for buyers' pages and CDN caches. No exact stock is ever shown: a
// number would be stale at once and invite refresh storms.
const (
	StatusNotStarted   = "NOT_STARTED"    // before start_at
	StatusOpen         = "OPEN"           // admitting normally
	StatusThrottled    = "THROTTLED"      // commits too slow, or coming back in steps; or the judged wait above half of max_queue_wait
	StatusQueueFull    = "QUEUE_FULL"     // admission stopped: inbox age or permits exhausted
	StatusTempSoldOut  = "TEMP_SOLD_OUT"  // no token now; a release may free one
	StatusFinalSoldOut = "FINAL_SOLD_OUT" // no token, and none can come back (ended, or nothing reserved)
	StatusEnded        = "ENDED"          // at or after end_at, tokens left unsold
	StatusPaused       = "PAUSED"         // paused by an operator
)

// skuStatus renders the sale gate's verdict (sku.Gate) on an available
// SKU's published stats as a coarse status, and an open SKU's load as
// admission judges it with the SKU's gate g (an unavailable one has no
// status: it is answered 503 UNAVAILABLE, as every other route answers
// it). final is set for statuses that cannot change any more (longer
// cache TTL).
func (l limits) skuStatus(st actors.Stats, now time.Time, g *gate) (status string, final bool) {
	switch v := gateOf(&st, now); {
	case v == sku.VerdictNotStarted:
		return StatusNotStarted, false
	case v.SoldOutForGood():
		return StatusFinalSoldOut, true
	case v == sku.VerdictEnded:
		return StatusEnded, true
	case v == sku.VerdictPaused:
		return StatusPaused, false
	case v == sku.VerdictSoldOut:
		return StatusTempSoldOut, false
	}
	return loadStatus(l.Limits, l.decide(&st, g), g.inFlight.Load()), false
}

// loadStatus is the status of an open SKU whose admission decided d with
// inFlight permits out: the state a reserve would be refused with, else
// THROTTLED while ramping or above half of max_queue_wait, else OPEN.
func loadStatus(l admission.Limits, d admission.Decision, inFlight int64) string {
	if refusal, refused := d.Refusal(inFlight); refused && refusal == admission.QueueFull {
		return StatusQueueFull
	}
	if d.State != admission.Open || l.Tight(d) {
		return StatusThrottled
	}
	return StatusOpen
}

// statusBody is the answer of GET /v1/campaigns/{c}/skus/{s}.
type statusBody struct {
	CampaignID string `json:"campaign_id"`
	SKUID      string `json:"sku_id"`
	Status     string `json:"status"`
	StartAt    string `json:"start_at,omitempty"` // unknown until the SKU's definition is applied
	EndAt      string `json:"end_at,omitempty"`
}

// handleStatus is GET /v1/campaigns/{c}/skus/{s}: the coarse status, with a
// short Cache-Control max-age (longer once final); 503 UNAVAILABLE while
// the SKU is recovering or its log has failed (actors.Stats.Unavailable),
// the answer its reserves get.
func (s *Server) handleStatus(ctx *fasthttp.RequestCtx) string {
	campaignID, skuID, ok := pathSKU(ctx)
	var st actors.Stats
	if ok {
		st, ok = s.engine.SKUStats(campaignID, skuID)
	}
	if !ok {
		return write(ctx, errorReply(reasonNotFound, "no such SKU"))
	}
	if st.Unavailable {
		return write(ctx, replyUnavailable)
	}
	status, final := s.limits.skuStatus(st, s.cfg.Clock(), s.gates.get(campaignID, skuID))
	maxAge := s.cfg.StatusMaxAge
	if final {
		maxAge = s.cfg.FinalStatusMaxAge
	}
	ctx.Response.Header.Set("Cache-Control", "public, max-age="+strconv.FormatInt(int64(maxAge/time.Second), 10))
	return write(ctx, jsonReply(fasthttp.StatusOK, status, statusBody{
		CampaignID: campaignID,
		SKUID:      skuID,
		Status:     status,
		StartAt:    timefmt.OptionalMillis(st.Definition.StartAt),
		EndAt:      timefmt.OptionalMillis(st.Definition.EndAt),
	}))
}
