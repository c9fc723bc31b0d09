package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/timefmt"
	"github.com/valyala/fasthttp"
)

// digest hashes a token so that comparisons take the same time whatever
// the lengths (subtle.ConstantTimeCompare returns early on a length
// mismatch).
func digest(token string) [32]byte { return sha256.Sum256([]byte(token)) }

// admin wraps an admin handler with the bearer-token check. The 401 says
// whether no bearer token was given or a wrong one.
func (s *Server) admin(h func(ctx *fasthttp.RequestCtx) string) func(ctx *fasthttp.RequestCtx) string {
	return withBearer(&s.adminID, "seckill-admin", "admin", h)
}

// withBearer wraps h with a check of the request's bearer token against
// want, the SHA-256 of the token (compared in constant time); who names
// the token in the 401's detail, realm in its WWW-Authenticate.
func withBearer(want *[32]byte, realm, who string, h func(ctx *fasthttp.RequestCtx) string) func(ctx *fasthttp.RequestCtx) string {
	return func(ctx *fasthttp.RequestCtx) string {
		token, ok := bearer(ctx.Request.Header.Peek("Authorization"))
		given := ok && len(token) > 0
		got := digest(string(token))
		if !given || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			detail := who + " bearer token wrong"
			if !given {
				detail = who + " bearer token missing"
			}
			ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="`+realm+`"`)
			return write(ctx, errorReply(reasonUnauthorized, detail))
		}
		return h(ctx)
	}
}

// requestConfig is fasthttp's HeaderReceived: the body limit of a request,
// decided from its header before its body is read. Only a campaign PUT
// with the admin token gets MaxCampaignBodySize; a request without it
// cannot make the server read more than MaxRequestBodySize, except a batch
// reserve (POST .../reservations:batch), which has MaxBatchBodySize.
func (s *Server) requestConfig(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	return s.bodyLimits().RequestConfig(h, s.isAdmin)
}

// bodyLimit returns the body limit of a request by its header
// (BodyLimits.Of; a campaign PUT is large only with the admin token).
func (s *Server) bodyLimit(h *fasthttp.RequestHeader) int {
	return s.bodyLimits().Of(h, s.isAdmin)
}

// bodyLimits are the body limits the Config sets.
func (s *Server) bodyLimits() BodyLimits {
	return BodyLimits{Request: s.cfg.MaxRequestBodySize, Batch: s.cfg.MaxBatchBodySize, Campaign: s.cfg.MaxCampaignBodySize}
}

// isAdmin reports whether h carries the admin token.
func (s *Server) isAdmin(h *fasthttp.RequestHeader) bool {
	token, ok := bearer(h.Peek("Authorization"))
	got := digest(string(token))
	return ok && len(token) > 0 && subtle.ConstantTimeCompare(got[:], s.adminID[:]) == 1
}

// bearer returns the credentials of an "Authorization: Bearer <token>"
// header; the scheme is case-insensitive (RFC 9110, section 11.1).
func bearer(header []byte) ([]byte, bool) {
	const scheme = "bearer "
	if len(header) < len(scheme) || !bytes.EqualFold(header[:len(scheme)], []byte(scheme)) {
		return nil, false
	}
	return header[len(scheme):], true
}

// handleDefine is PUT /admin/campaigns/{c}: define or redefine a campaign
// (201 Created with Location when the campaign had no SKU before, 200
// otherwise).
// Redefining may only move end_at later or raise sale_limit; every SKU is
// checked before any is applied (409 otherwise). The campaign's new SKUs
// must fit in the engine's limit of SKUs, checked and held before any is
// defined: otherwise 507 TOO_MANY_SKUS and nothing is created. 507
// (Insufficient Storage, RFC 4918, section 11.5: the server cannot store what the
// request needs) because the body is valid and would succeed on an engine
// with room: it is this server's capacity, which an operator changes
// (--max-skus, the open-files limit), not a conflict with the campaign's
// state (409) nor a malformed body (4xx), and not transient (503).
func (s *Server) handleDefine(ctx *fasthttp.RequestCtx) string {
	campaignID := pathParam(ctx, "campaign_id")
	if !sku.ValidID(campaignID) {
		return write(ctx, badPathID(ctx))
	}
	var c Campaign
	if err := decodeJSON(ctx.PostBody(), &c); err != nil {
		return write(ctx, bodyError(err))
	}
	if c.CampaignID == "" {
		c.CampaignID = campaignID
	}
	if c.CampaignID != campaignID {
		return write(ctx, errorReply(reasonBadRequest, "campaign_id of the body differs from the path"))
	}
	defs, err := c.definitionsFor(s.engine)
	if err != nil { // the message may quote the ids of the body
		return write(ctx, errorReply(reasonBadRequest, boundDetail(err.Error())))
	}
	if c.EntryPass != nil && c.EntryPass.Required && s.cfg.EntryPasses.Keys == nil {
		// Every reserve would be refused: say so now, not at the sale.
		return write(ctx, errorReply(reasonBadRequest,
			"entry_pass.required: this server has no entry-pass keys (--entry-pass-keys)"))
	}
	if s.claimer != nil { // a cell: local or published, never both (cell.go)
		ectx, cancel := s.engineContext()
		err := s.claimer.ClaimCampaign(ectx, campaignID)
		cancel()
		if r, ok := claimReply(err); ok {
			return write(ctx, r)
		} else if err != nil {
			return write(ctx, s.engineError("admin_define", err, ""))
		}
	}
	if err := checkRedefinitions(s.engine, defs, s.cfg.Clock()); err != nil {
		return write(ctx, errorReply(reasonDefinitionConflict, err.Error()))
	}
	release, err := s.engine.MakeRoom(defs)
	if err != nil {
		if r, ok := notBegunReply(err); ok {
			return write(ctx, r)
		}
		return write(ctx, s.engineError("admin_define", err, "/admin/campaigns/"+campaignID))
	}
	created := !s.campaignExists(campaignID)
	if s.feed != nil {
		defer s.feed.SKUDefined() // campaign feeds list the campaign's SKUs again
	}
	errs := s.engine.DefineAll(context.Background(), defs, s.cfg.RequestTimeout)
	for i, d := range defs {
		if errs[i] == nil {
			s.gates.get(d.CampaignID, d.SKUID) // its series exist from its definition
		}
	}
	if _, err := firstFailure(errs); err != nil {
		cut := cutShort(defs, errs)
		release(cut)
		if cut {
			return write(ctx, cutShortReply(campaignID, defs, errs, s.engine.PendingFinisher()))
		}
		if r, ok := claimReply(err); ok {
			return write(ctx, r)
		}
		if errors.Is(err, sku.ErrInvalidDefinition) {
			return write(ctx, errorReply(reasonDefinitionConflict, err.Error()))
		}
		return write(ctx, s.engineError("admin_define", err, "/admin/campaigns/"+campaignID))
	}
	release(false)
	// The answer is the campaign as GET shows it, from the durable
	// definitions Define has published (every SKU of the campaign, the
	// ones this PUT left out too).
	view, ok := s.campaignView(campaignID)
	if !ok {
		s.log.Error("admin_define: the campaign just defined has no SKU", "campaign_id", campaignID)
		return write(ctx, errorReply(reasonInternal, ""))
	}
	if created { // RFC 9110, section 9.3.4: a PUT that creates answers 201
		r := jsonReply(fasthttp.StatusCreated, outcomeOK, view)
		r.location = "/admin/campaigns/" + campaignID
		return write(ctx, r)
	}
	return write(ctx, jsonReply(fasthttp.StatusOK, outcomeOK, view))
}

// campaignExists reports whether the engine knows a SKU of campaignID.
func (s *Server) campaignExists(campaignID string) bool {
	for _, st := range s.engine.AllStats() {
		if st.CampaignID == campaignID {
			return true
		}
	}
	return false
}

// pausedBody answers pause and resume.
type pausedBody struct {
	CampaignID string `json:"campaign_id"`
	SKUID      string `json:"sku_id"`
	Paused     bool   `json:"paused"`
}

// handlePause is POST /admin/campaigns/{c}/skus/{s}/pause. Its body is
// optional and carries nothing: empty or {}.
func (s *Server) handlePause(ctx *fasthttp.RequestCtx) string {
	return s.setPaused(ctx, true)
}

// handleResume is POST /admin/campaigns/{c}/skus/{s}/resume. Its body is
// optional and carries nothing: empty or {}.
func (s *Server) handleResume(ctx *fasthttp.RequestCtx) string {
	return s.setPaused(ctx, false)
}

// setPaused pauses or resumes a SKU. A body with anything in it is refused
// before the engine is asked, so that no client believes it recorded a
// reason or targeted another SKU.
func (s *Server) setPaused(ctx *fasthttp.RequestCtx, paused bool) string {
	campaignID, skuID, ok := pathSKU(ctx)
	if !ok {
		return write(ctx, badPathID(ctx))
	}
	if err := decodeNoFields(ctx.PostBody()); err != nil {
		return write(ctx, bodyError(err))
	}
	ectx, cancel := s.engineContext()
	var err error
	if paused {
		err = s.engine.Pause(ectx, campaignID, skuID)
	} else {
		err = s.engine.Resume(ectx, campaignID, skuID)
	}
	cancel()
	if err != nil {
		return write(ctx, s.engineError("admin_pause", err, "/v1/campaigns/"+campaignID+"/skus/"+skuID))
	}
	return write(ctx, jsonReply(fasthttp.StatusOK, outcomeOK, pausedBody{CampaignID: campaignID, SKUID: skuID, Paused: paused}))
}

// auditBody is the exact recount of one SKU.
type auditBody struct {
	CampaignID  string            `json:"campaign_id"`
	SKUID       string            `json:"sku_id"`
	SaleLimit   uint32            `json:"sale_limit"`
	Available   uint32            `json:"available"`
	Reserved    uint32            `json:"reserved"`
	Confirmed   uint32            `json:"confirmed"`
	States      map[string]uint32 `json:"states"`
	HeldClosed  uint32            `json:"held_closed"`
	Refunds     uint32            `json:"refunds_required"`
	Rejected    uint32            `json:"durable_rejections"`
	Total       uint32            `json:"reservations"`
	InvariantOK bool              `json:"invariant_ok"`
	Violations  []string          `json:"violations"`
	// A celled SKU's cell and its share of the ledger (absent otherwise):
	// granted - returned = available + reserved + confirmed.
	Cell     string `json:"cell,omitempty"`
	Granted  uint64 `json:"granted,omitempty"`
	Returned uint64 `json:"returned,omitempty"`
	// AsOf is the time of the last record of the state recounted (the
	// recount runs on a copy frozen then).
	AsOf string `json:"as_of"`
}

// auditBodyOf is the answer for one SKU's audit.
func auditBodyOf(campaignID, skuID string, a sku.Audit) auditBody {
	n := a.Counts
	return auditBody{
		CampaignID: campaignID, SKUID: skuID,
		SaleLimit: n.SaleLimit, Available: n.Available, Reserved: n.Reserved, Confirmed: n.Confirmed,
		States: map[string]uint32{
			sku.StatePendingPayment.String(): n.PendingPayment,
			sku.StatePaid.String():           n.Paid,
			sku.StateClosed.String():         n.Closed,
		},
		HeldClosed: n.HeldClosed, Refunds: n.RefundsRequired, Rejected: n.Rejected, Total: n.Reservations,
		InvariantOK: a.OK(), Violations: append([]string{}, a.Violations...),
		Granted: n.Granted, Returned: n.Returned,
		AsOf: timefmt.Millis(a.LastAt),
	}
}

// campaignAuditBody is GET /admin/campaigns/{c}/audit's answer.
type campaignAuditBody struct {
	CampaignID    string `json:"campaign_id"`
	PurchaseLimit string `json:"purchase_limit"`
	// LiveUsers counts the users holding a live purchase; with
	// purchase_limit "campaign" it equals the live purchases
	// (reserved + confirmed over the SKUs) when the invariant holds.
	LiveUsers   int         `json:"live_users"`
	InvariantOK bool        `json:"invariant_ok"`
	Violations  []string    `json:"violations"` // the campaign's rule; each SKU lists its own
	SKUs        []auditBody `json:"skus"`
}

// handleCampaignAudit is GET /admin/campaigns/{c}/audit: every SKU's
// audit and the campaign's purchase rule.
func (s *Server) handleCampaignAudit(ctx *fasthttp.RequestCtx) string {
	campaignID := pathParam(ctx, "campaign_id")
	if !sku.ValidID(campaignID) {
		return write(ctx, badPathID(ctx))
	}
	ectx, cancel := s.engineContext()
	a, err := s.engine.CampaignAudit(ectx, campaignID)
	cancel()
	if err != nil {
		return write(ctx, s.readError("admin_campaign_audit", err))
	}
	body := campaignAuditBody{CampaignID: campaignID, PurchaseLimit: a.PurchaseLimit.String(), LiveUsers: a.LiveUsers,
		InvariantOK: a.OK(), Violations: append([]string{}, a.Violations...), SKUs: make([]auditBody, 0, len(a.SKUs))}
	for _, sa := range a.SKUs {
		b := auditBodyOf(campaignID, sa.SKUID, sa.Audit)
		if st, ok := s.engine.SKUStats(campaignID, sa.SKUID); ok {
			b.Cell = st.Definition.Cell
		}
		body.SKUs = append(body.SKUs, b)
	}
	return write(ctx, jsonReply(fasthttp.StatusOK, outcomeOK, body))
}

// handleAudit is GET /admin/campaigns/{c}/skus/{s}/audit.
func (s *Server) handleAudit(ctx *fasthttp.RequestCtx) string {
	campaignID, skuID, ok := pathSKU(ctx)
	if !ok {
		return write(ctx, badPathID(ctx))
	}
	ectx, cancel := s.engineContext()
	a, err := s.engine.Audit(ectx, campaignID, skuID)
	cancel()
	if err != nil {
		return write(ctx, s.readError("admin_audit", err))
	}
	body := auditBodyOf(campaignID, skuID, a)
	if st, ok := s.engine.SKUStats(campaignID, skuID); ok {
		body.Cell = st.Definition.Cell
	}
	return write(ctx, jsonReply(fasthttp.StatusOK, outcomeOK, body))
}

// refundBody is one payment to refund.
type refundBody struct {
	ReservationID string `json:"reservation_id"`
	PaymentID     string `json:"payment_id"`
	Amount        int64  `json:"amount"`
	At            string `json:"at"`
}

// refundsBody lists the payments of a SKU that must be refunded.
type refundsBody struct {
	CampaignID string       `json:"campaign_id"`
	SKUID      string       `json:"sku_id"`
	Refunds    []refundBody `json:"refunds"`
}

// handleRefunds is GET /admin/campaigns/{c}/skus/{s}/refunds.
func (s *Server) handleRefunds(ctx *fasthttp.RequestCtx) string {
	campaignID, skuID, ok := pathSKU(ctx)
	if !ok {
		return write(ctx, badPathID(ctx))
	}
	ectx, cancel := s.engineContext()
	refunds, err := s.engine.Refunds(ectx, campaignID, skuID)
	cancel()
	if err != nil {
		return write(ctx, s.readError("admin_refunds", err))
	}
	body := refundsBody{CampaignID: campaignID, SKUID: skuID, Refunds: make([]refundBody, 0, len(refunds))}
	for _, r := range refunds {
		body.Refunds = append(body.Refunds, refundBody{
			ReservationID: r.ReservationID,
			PaymentID:     r.PaymentID,
			Amount:        r.Amount,
			At:            timefmt.Millis(r.At),
		})
	}
	return write(ctx, jsonReply(fasthttp.StatusOK, outcomeOK, body))
}

// handleSnapshot is POST /admin/campaigns/{c}/skus/{s}/snapshot: it asks
// the engine to snapshot the SKU now. Its body is optional and carries
// nothing: empty or {}.
func (s *Server) handleSnapshot(ctx *fasthttp.RequestCtx) string {
	campaignID, skuID, ok := pathSKU(ctx)
	if !ok {
		return write(ctx, badPathID(ctx))
	}
	if err := decodeNoFields(ctx.PostBody()); err != nil {
		return write(ctx, bodyError(err))
	}
	ectx, cancel := s.engineContext()
	info, err := s.engine.Snapshot(ectx, campaignID, skuID)
	cancel()
	if err != nil && classify(err).reason == reasonInternal {
		// The I/O error of writing the file (a full disk: ENOSPC) is the
		// disk's, not a bug: nothing was replaced, the SKU goes on from
		// its log and older snapshots.
		s.log.Warn("snapshot not written", "campaign", campaignID, "sku", skuID, "err", err)
		return write(ctx, errorReply(ReasonUnavailable, "the snapshot was not written: "+err.Error()+"; the SKU goes on from its log and older snapshots"))
	}
	if err != nil {
		return write(ctx, s.engineError("admin_snapshot", err, ""))
	}
	return write(ctx, jsonReply(fasthttp.StatusOK, outcomeOK, snapshotBody{CampaignID: campaignID, SKUID: skuID, Snapshot: info}))
}

// snapshotBody answers a snapshot: the engine's description of it.
type snapshotBody struct {
	CampaignID string              `json:"campaign_id"`
	SKUID      string              `json:"sku_id"`
	Snapshot   actors.SnapshotInfo `json:"snapshot"`
}
