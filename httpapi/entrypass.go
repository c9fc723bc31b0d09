package httpapi

import (
	"errors"
	"io"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/entrypass"
	"github.com/seckill/seckill/internal/timefmt"
)

// EntryPassConfig configures entry passes (package entrypass).
// The zero value accepts no pass: a reserve that carries one answers 403
// ENTRY_PASS_INVALID, one on a SKU whose definition requires a pass 403
// ENTRY_PASS_REQUIRED, and the issuing route 404. None of its secrets is
// ever logged (entrypass's types never print them).
type EntryPassConfig struct {
	// Keys verifies the passes of reserves; its first key signs the
	// passes the issuing route hands out (--entry-pass-keys).
	Keys *entrypass.KeyRing
	// Subjects turns the subject values of an issuing request into subject
	// keys (--entry-pass-subject-secret). Required with IssuerToken.
	Subjects *entrypass.SubjectHasher
	// IssuerToken is the bearer token of the issuing route
	// (--entry-pass-issuer-token), not the admin token: whoever holds it
	// can mint a pass for any user. Empty: the route answers 404.
	IssuerToken string
	// Random is the nonce source of issued passes. Default crypto/rand.
	Random io.Reader
}

// issuing reports whether the issuing route is served.
func (c *EntryPassConfig) issuing() bool { return c.IssuerToken != "" }

// check refuses an issuer token without the keys and subject secret it
// needs.
func (c *EntryPassConfig) check() error {
	if c.IssuerToken != "" && (c.Keys == nil || c.Subjects == nil) {
		return errors.New("httpapi: an entry-pass issuer token needs the entry-pass keys and the subject secret")
	}
	return nil
}

// Reasons of the entry-pass refusals (the "error" field).
const (
	reasonEntryPassRequired = "ENTRY_PASS_REQUIRED"
	reasonEntryPassExpired  = "ENTRY_PASS_EXPIRED"
	reasonEntryPassInvalid  = "ENTRY_PASS_INVALID"
	reasonEntryPassMismatch = "ENTRY_PASS_MISMATCH"
)

// Labels of seckill_entry_pass_rejections_total beyond entrypass.Reason's
// classes (malformed, unknown_key, bad_mac, wrong_scope, wrong_user,
// not_yet_valid, expired).
const (
	passRejectRequired       = "required"        // no pass where the definition requires one
	passRejectReservedPrefix = "reserved_prefix" // a request_id of the form "ep.…" without a pass
	passRejectNotConfigured  = "not_configured"  // a pass, and no keys to verify it
	passRejectMismatch       = "mismatch"        // a pass, and another request_id in the body
)

// passRejectLabels are every label value of the rejection counter, made at
// start so /metrics shows zeros.
var passRejectLabels = []string{
	passRejectRequired, passRejectReservedPrefix, passRejectNotConfigured, passRejectMismatch,
	"malformed", "unknown_key", "bad_mac", "wrong_scope", "wrong_user", "not_yet_valid", "expired", "other",
}

// passMetrics counts entry-pass refusals by reason, and the passes issued.
type passMetrics struct {
	rejections map[string]prometheus.Counter // read-only after newPassMetrics
	issued     prometheus.Counter
}

func newPassMetrics(reg prometheus.Registerer) (*passMetrics, error) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "seckill_entry_pass_rejections_total",
		Help: "Reserves refused by the entry-pass check, by reason (the reason is never in the answer).",
	}, []string{"reason"})
	issued := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "seckill_entry_passes_issued_total",
		Help: "Entry passes handed out by the issuing route.",
	})
	m := &passMetrics{rejections: make(map[string]prometheus.Counter), issued: issued}
	for _, l := range passRejectLabels {
		m.rejections[l] = vec.WithLabelValues(l)
	}
	for _, c := range []prometheus.Collector{vec, issued} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// The fixed refusals, encoded once.
var (
	replyEntryPassRequired = errorReply(reasonEntryPassRequired, "this SKU takes reserves with an entry pass only")
	replyEntryPassInvalid  = errorReply(reasonEntryPassInvalid, "")
	replyEntryPassMismatch = errorReply(reasonEntryPassMismatch,
		"request_id must be the entry pass's (or left out)")
	replyReservedPrefix = errorReply(reasonBadRequest,
		`request_id: the prefix "`+entrypass.RequestIDPrefix+`" is reserved for entry passes`)
)

// passed is a reserve that went through the entry-pass check: the
// request_id to use (the pass's, when the body left it out) and the holder
// to record (zero without a pass).
type passed struct {
	requestID string
	holder    sku.Holder
}

// checkEntryPass is the one place a reserve's or an entry's entry pass is
// checked; a route that reserves (one item or a batch) or enters a lottery
// calls it per item, before the answer cache, the flights and the fast
// paths, on the SKU's published definition. Its checks, in order:
//
//  1. no pass: ENTRY_PASS_REQUIRED (403) if the definition requires one; a
//     request_id with the prefix "ep." is refused (400): it belongs to a
//     pass, and whoever saw the pass must not spend it without the pass;
//  2. the pass: entrypass.KeyRing.Verify against the path's campaign and
//     SKU and the body's user at the server's clock (2 s leeway): expired
//     answers ENTRY_PASS_EXPIRED (403) with expired_at, every other failure
//     one ENTRY_PASS_INVALID (403), so the answer is no oracle;
//  3. a body request_id other than the pass's: ENTRY_PASS_MISMATCH (400).
//
// A refusal decides nothing and records nothing; its reason goes to the
// log (debug) and to seckill_entry_pass_rejections_total. ok is false with
// rep the refusal. userID has been checked (checkID); requestID may be ""
// only with a pass.
func (s *Server) checkEntryPass(def *sku.Definition, campaignID, skuID, requestID, userID, text string) (p passed, rep reply, ok bool) {
	return s.checkEntryPassAt(def, campaignID, skuID, requestID, userID, []byte(text), s.cfg.Clock())
}

// checkEntryPassAt is checkEntryPass of a pass text held as bytes (a
// reserve's body: entrypass.KeyRing.VerifyBytes reads it in place) at now,
// for a caller that has read the server's clock already (a reserve: its
// fast paths use the same reading).
func (s *Server) checkEntryPassAt(def *sku.Definition, campaignID, skuID, requestID, userID string, text []byte, now time.Time) (p passed, rep reply, ok bool) {
	if len(text) == 0 {
		switch {
		case def.EntryPass.Required:
			return p, s.passRefused(campaignID, skuID, passRejectRequired, replyEntryPassRequired), false
		case strings.HasPrefix(requestID, entrypass.RequestIDPrefix):
			return p, s.passRefused(campaignID, skuID, passRejectReservedPrefix, replyReservedPrefix), false
		}
		return passed{requestID: requestID}, rep, true
	}
	keys := s.cfg.EntryPasses.Keys
	if keys == nil {
		return p, s.passRefused(campaignID, skuID, passRejectNotConfigured, replyEntryPassInvalid), false
	}
	pass, err := keys.VerifyBytes(text, entrypass.Scope{CampaignID: campaignID, SKUID: skuID, UserID: userID}, now.UnixMilli())
	if err != nil {
		var te *entrypass.TimeError
		if errors.Is(err, entrypass.ErrExpired) && errors.As(err, &te) {
			rep = reasonReply(reasonEntryPassExpired,
				errorBody{Error: reasonEntryPassExpired, ExpiredAt: timefmt.Millis(te.ExpiresAtMs)})
			return p, s.passRefused(campaignID, skuID, entrypass.Reason(err), rep), false
		}
		return p, s.passRefused(campaignID, skuID, entrypass.Reason(err), replyEntryPassInvalid), false
	}
	id := pass.RequestID()
	if requestID != "" && requestID != id {
		return p, s.passRefused(campaignID, skuID, passRejectMismatch, replyEntryPassMismatch), false
	}
	return passed{requestID: id, holder: holderOf(&pass)}, rep, true
}

// passRefused counts and logs a refusal and returns its answer.
func (s *Server) passRefused(campaignID, skuID, reason string, rep reply) reply {
	c, ok := s.passMetrics.rejections[reason]
	if !ok {
		c = s.passMetrics.rejections["other"]
	}
	c.Inc()
	s.rejected(layerEntryPass)
	s.log.Debug("entry pass refused", "campaign_id", campaignID, "sku_id", skuID, "reason", reason)
	return rep
}

// holderOf is what the SKU records of a verified pass.
func holderOf(p *entrypass.Pass) sku.Holder {
	h := sku.Holder{Tier: p.Tier, Risk: p.Risk}
	for k := entrypass.SubjectKind(0); k < entrypass.SubjectKindCount; k++ {
		if key, ok := p.Subjects.Get(k); ok {
			h.Subjects |= 1 << k
			h.Keys[k] = sku.SubjectKey(key)
		}
	}
	return h
}
