package httpapi

import (
	"crypto/rand"
	"fmt"
	"sort"

	"github.com/seckill/seckill/entrypass"
	"github.com/seckill/seckill/internal/timefmt"
	"github.com/valyala/fasthttp"
)

// MaxSubjectValueLength bounds one subject value of an issuing request, in
// bytes: a device id, payment account, address or network prefix as the
// gateway normalised it.
const MaxSubjectValueLength = 256

// issueRequest is the body of POST .../entry-passes.
type issueRequest struct {
	UserID   string            `json:"user_id" jsonkeys:"required"`
	Tier     *int              `json:"tier"`
	Risk     *int              `json:"risk"`
	Subjects map[string]string `json:"subjects"`
}

// issueAnswer is its 200 answer.
type issueAnswer struct {
	EntryPass string `json:"entry_pass"`
	RequestID string `json:"request_id"`
	ExpiresAt string `json:"expires_at"`
}

// issuer wraps the issuing route with its bearer-token check; without an
// issuer token configured the route answers 404.
func (s *Server) issuer(h func(ctx *fasthttp.RequestCtx) string) func(ctx *fasthttp.RequestCtx) string {
	if !s.cfg.EntryPasses.issuing() {
		return func(ctx *fasthttp.RequestCtx) string {
			return write(ctx, errorReply(reasonNotFound, "entry passes are not issued by this server"))
		}
	}
	return withBearer(&s.issuerID, "seckill-entry-pass-issuer", "entry-pass issuer", h)
}

// handleIssuePass is POST /v1/campaigns/{c}/skus/{s}/entry-passes
// {"user_id", "tier", "risk", "subjects": {"device", "payment_account",
// "address", "network"}} (all but user_id optional): it signs a pass with
// the ring's first key, the subject values turned into their keyed hashes,
// and answers {"entry_pass", "request_id", "expires_at"}. It is open from
// start_at - entry_pass.lead to end_at (403 NOT_STARTED, ENDED); the pass
// is valid from now to max(now, start_at) + entry_pass.ttl (at most 24 h
// from now), so a pass fetched during the lead lasts ttl into the sale.
func (s *Server) handleIssuePass(ctx *fasthttp.RequestCtx) string {
	campaignID, skuID, ok := pathSKU(ctx)
	if !ok {
		return write(ctx, errorReply(reasonNotFound, "no such SKU"))
	}
	var req issueRequest
	if err := decodeJSON(ctx.PostBody(), &req); err != nil {
		return write(ctx, bodyError(err))
	}
	claims, bad := s.issueClaims(&req)
	if bad != "" {
		return write(ctx, errorReply(reasonBadRequest, bad))
	}
	st, known := s.engine.SKUStats(campaignID, skuID)
	if !known {
		return write(ctx, errorReply(reasonNotFound, "no such SKU"))
	}
	def := st.Definition
	now := s.cfg.Clock().UnixMilli()
	switch {
	case now < def.StartAt-def.EntryPassLead():
		return write(ctx, errorReply(reasonNotStarted,
			"entry passes are issued from "+timefmt.Millis(def.StartAt-def.EntryPassLead())))
	case now >= def.EndAt:
		return write(ctx, replyEnded)
	}
	claims.CampaignID, claims.SKUID = campaignID, skuID
	claims.NotBeforeMs = now
	claims.ExpiresAtMs = min(max(now, def.StartAt)+def.EntryPassTTL(), now+entrypass.MaxLifetimeMs, entrypass.MaxTimeMs)
	random := s.cfg.EntryPasses.Random
	if random == nil {
		random = rand.Reader
	}
	text, pass, err := entrypass.Mint(s.cfg.EntryPasses.Keys.Signer(), claims, random)
	if err != nil {
		s.log.Error("minting an entry pass failed", "campaign_id", campaignID, "sku_id", skuID, "err", err)
		return write(ctx, errorReply(reasonInternal, ""))
	}
	s.passMetrics.issued.Inc()
	return write(ctx, jsonReply(fasthttp.StatusOK, outcomeOK, issueAnswer{
		EntryPass: text, RequestID: pass.RequestID(), ExpiresAt: timefmt.Millis(claims.ExpiresAtMs),
	}))
}

// issueClaims checks an issuing request and returns its claims (user,
// tier, risk, subject keys), or what is wrong with it.
func (s *Server) issueClaims(req *issueRequest) (entrypass.Claims, string) {
	var c entrypass.Claims
	if bad := checkID("user_id", req.UserID); bad != "" {
		return c, bad
	}
	c.UserID = req.UserID
	for _, f := range [...]struct {
		name string
		v    *int
		dst  *uint8
	}{{"tier", req.Tier, &c.Tier}, {"risk", req.Risk, &c.Risk}} {
		if f.v == nil {
			continue
		}
		if *f.v < 0 || *f.v > 255 {
			return c, f.name + ": must be an integer 0-255"
		}
		*f.dst = uint8(*f.v)
	}
	names := make([]string, 0, len(req.Subjects))
	for name := range req.Subjects {
		names = append(names, name)
	}
	sort.Strings(names) // the first bad name is always the same one
	for _, name := range names {
		kind, ok := entrypass.ParseSubjectKind(name)
		if !ok {
			return c, boundDetail(fmt.Sprintf("subjects: unknown subject %q (device, payment_account, address, network)", name))
		}
		v := req.Subjects[name]
		if len(v) == 0 || len(v) > MaxSubjectValueLength {
			return c, fmt.Sprintf("subjects.%s: must be 1-%d bytes", name, MaxSubjectValueLength)
		}
		c.Subjects.Set(kind, s.cfg.EntryPasses.Subjects.Hash(kind, v))
	}
	return c, ""
}
