package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/fasthttp/router"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/internal/timefmt"
	"github.com/seckill/seckill/lottery"
	"github.com/valyala/fasthttp"
)

// Lotteries runs the commands of lottery sales (Config.Lotteries).
// *actors.Engine satisfies it; without it the lottery routes answer 404.
type Lotteries interface {
	// Enter records a user's entry, once per user, with its entry pass's
	// holder (actors.Engine.Enter).
	Enter(ctx context.Context, campaignID, skuID, requestID, userID string, holder sku.Holder) (sku.EntryResult, error)
	// Draw records the draw's beacon round, randomness and optional
	// signature (actors.Engine.Draw).
	Draw(ctx context.Context, campaignID, skuID string, round uint64, randomness, signature []byte) (sku.Outcome, error)
	// Entry returns an entry and its answer by request_id, or actors.ErrNotFound.
	Entry(ctx context.Context, campaignID, skuID, requestID string) (sku.EntryView, error)
	// Frozen returns a frozen copy of the SKU's durable state, read off the actor.
	Frozen(ctx context.Context, campaignID, skuID string) (*sku.Frozen, error)
}

// reasonLotterySale answers a plain reserve on a lottery SKU.
var reasonLotterySale = sku.OutcomeLotterySale.String()

// lotteryRoutes adds the routes of lottery sales.
func (s *Server) lotteryRoutes(r *router.Router, get func(string, fasthttp.RequestHandler)) {
	r.POST("/v1/campaigns/{campaign_id}/skus/{sku_id}/entries", s.route("enter", s.handleEnter))
	get("/v1/campaigns/{campaign_id}/skus/{sku_id}/entries/{request_id}", s.route("entry_status", s.handleEntry))
	get("/v1/campaigns/{campaign_id}/skus/{sku_id}/lottery", s.route("lottery_info", s.handleLotteryInfo))
	r.POST("/admin/campaigns/{campaign_id}/skus/{sku_id}/lottery/draw", s.route("admin_draw", s.admin(s.handleDraw)))
	get("/admin/campaigns/{campaign_id}/skus/{sku_id}/lottery/entries.csv", s.route("admin_entries_csv", s.admin(s.handleEntriesCSV)))
}

func entryURL(campaignID, skuID, requestID string) string {
	return "/v1/campaigns/" + campaignID + "/skus/" + skuID + "/entries/" + requestID
}

func lotteryURL(campaignID, skuID string) string {
	return "/v1/campaigns/" + campaignID + "/skus/" + skuID + "/lottery"
}

// enterRequest is the body of POST .../entries.
type enterRequest struct {
	// RequestID may be left out (or null) with an entry pass: the pass's.
	RequestID *string `json:"request_id"`
	UserID    string  `json:"user_id" jsonkeys:"required"`
	// EntryPass is an optional signed entry pass , checked by
	// checkEntryPass as for a reserve; its tier is the entry's tier.
	EntryPass string `json:"entry_pass"`
}

// enteredBody is the 202 answer to an entry, and to its repeats.
type enteredBody struct {
	Outcome     string `json:"outcome"`
	RequestID   string `json:"request_id"`
	EntrySeq    uint32 `json:"entry_seq"`
	Tier        uint8  `json:"tier"`
	Pseudonym   string `json:"pseudonym"`
	StatusURL   string `json:"status_url"`
	EvidenceURL string `json:"evidence_url"`
}

// handleEnter is POST /v1/campaigns/{c}/skus/{s}/entries: 202 ENTERED once
// the entry is fsynced (a repeat, by request_id or by user, gets the same
// entry), 403 ENTRIES_NOT_OPEN or ENTRIES_CLOSED, 409 NOT_LOTTERY, 422
// REQUEST_ID_REUSED, 503 PAUSED. An entry_pass goes through checkEntryPass
// as a reserve's does (its refusals, the pass's request_id, "ep." kept for
// passes), and its tier is the entry's tier; without one the tier is 0.
func (s *Server) handleEnter(ctx *fasthttp.RequestCtx) string {
	campaignID, skuID, ok := pathSKU(ctx)
	lots := s.lotteries
	if !ok || lots == nil {
		return write(ctx, errorReply(reasonNotFound, "no such SKU"))
	}
	var req enterRequest
	if err := decodeJSON(ctx.PostBody(), &req); err != nil {
		return write(ctx, bodyError(err))
	}
	var requestID string
	switch {
	case req.RequestID != nil:
		requestID = *req.RequestID
	case req.EntryPass == "":
		return write(ctx, bodyError(missingField("request_id")))
	}
	for _, bad := range []string{checkRequestID(requestID, req.EntryPass != ""), checkID("user_id", req.UserID)} {
		if bad != "" {
			return write(ctx, errorReply(reasonBadRequest, bad))
		}
	}
	st, known := s.engine.SKUStats(campaignID, skuID)
	if !known {
		return write(ctx, errorReply(reasonNotFound, "no such SKU"))
	}
	p, rep, ok := s.checkEntryPass(st.Definition, campaignID, skuID, requestID, req.UserID, req.EntryPass)
	if !ok {
		return write(ctx, rep)
	}
	ectx, cancel := s.engineContext()
	res, err := lots.Enter(ectx, campaignID, skuID, p.requestID, req.UserID, p.holder)
	cancel()
	if err != nil {
		return write(ctx, s.engineError("enter", err, entryURL(campaignID, skuID, p.requestID)))
	}
	reason := res.Outcome.String()
	switch res.Outcome {
	case sku.OutcomeEntered:
		e := res.Entry
		url := entryURL(campaignID, skuID, e.RequestID)
		rep := reasonReply(reason, enteredBody{Outcome: reason, RequestID: e.RequestID, EntrySeq: e.EntrySeq,
			Tier: e.Tier, Pseudonym: hex.EncodeToString(e.Pseudonym[:]), StatusURL: url, EvidenceURL: lotteryURL(campaignID, skuID)})
		rep.location = url
		return write(ctx, rep)
	case sku.OutcomeEntriesNotOpen, sku.OutcomeEntriesClosed:
		return write(ctx, errorReply(reason, ""))
	case sku.OutcomeNotLottery:
		return write(ctx, errorReply(reason, "this SKU sells first come, first served: reserve instead"))
	case sku.OutcomeAlreadyPurchased:
		return write(ctx, alreadyPurchasedReply(res.Purchase.ReservationID))
	case sku.OutcomeAlreadyEntered:
		return write(ctx, alreadyEnteredReply(res.Entered))
	case sku.OutcomeRequestIDReused:
		return write(ctx, replyRequestIDReused)
	case sku.OutcomePaused:
		return write(ctx, replyPaused)
	case sku.OutcomeSubjectLimit:
		return write(ctx, replyEntrySubjectLimit)
	case sku.OutcomeNotFound:
		return write(ctx, errorReply(reasonNotFound, ""))
	}
	s.log.Error("enter: unexpected outcome", "outcome", reason)
	return write(ctx, errorReply(reasonInternal, ""))
}

// alreadyEnteredReply is 409 ALREADY_ENTERED (purchase_limit "campaign"):
// the user's lottery entry e on another SKU may still win, so the user may
// neither buy nor enter elsewhere in the campaign until it has lost or its
// reservation is closed. It names the entry's SKU and status URL.
func alreadyEnteredReply(e sku.EntryRef) reply {
	reason := sku.OutcomeAlreadyEntered.String()
	return reasonReply(reason, errorBody{Error: reason, SKUID: e.SKUID,
		StatusURL: entryURL(e.CampaignID, e.SKUID, e.RequestID)})
}

// entryBody is the answer of GET .../entries/{request_id}.
type entryBody struct {
	RequestID     string            `json:"request_id"`
	EntrySeq      uint32            `json:"entry_seq"`
	Tier          uint8             `json:"tier"`
	Pseudonym     string            `json:"pseudonym"`
	Status        string            `json:"status"`
	Position      uint32            `json:"position,omitempty"`
	ReservationID string            `json:"reservation_id,omitempty"`
	ExpireAt      string            `json:"expire_at,omitempty"`
	Reservation   *feed.Reservation `json:"reservation,omitempty"`
	EvidenceURL   string            `json:"evidence_url"`
}

// handleEntry is GET /v1/campaigns/{c}/skus/{s}/entries/{request_id}:
// ENTERED, WON (with the reservation), WAITLISTED (with the position among
// those still waiting) or LOST; 404 when the request_id made no entry.
func (s *Server) handleEntry(ctx *fasthttp.RequestCtx) string {
	campaignID, skuID, ok := pathSKU(ctx)
	requestID := pathParam(ctx, "request_id")
	lots := s.lotteries
	if !ok || lots == nil || !sku.ValidID(requestID) {
		return write(ctx, errorReply(reasonNotFound, ""))
	}
	ectx, cancel := s.engineContext()
	v, err := lots.Entry(ectx, campaignID, skuID, requestID)
	cancel()
	if err != nil {
		return write(ctx, s.engineError("entry_status", err, entryURL(campaignID, skuID, requestID)))
	}
	body := entryBody{RequestID: v.RequestID, EntrySeq: v.EntrySeq, Tier: v.Tier, Pseudonym: hex.EncodeToString(v.Pseudonym[:]),
		Status: v.Status.String(), Position: v.Position, EvidenceURL: lotteryURL(campaignID, skuID)}
	if v.Status == sku.EntryWon {
		r := feed.NewReservation(v.Reservation)
		body.ReservationID, body.ExpireAt, body.Reservation = r.ReservationID, r.ExpireAt, &r
	}
	return write(ctx, jsonReply(fasthttp.StatusOK, body.Status, body))
}

// lotteryBody is the public evidence of a lottery (GET .../lottery):
// hashes and seeds as lowercase hex, times as RFC 3339.
type lotteryBody struct {
	CampaignID  string           `json:"campaign_id"`
	SKUID       string           `json:"sku_id"`
	Phase       string           `json:"phase"`
	Rules       lotteryRulesBody `json:"rules"`
	Commit      string           `json:"commit"`
	CommittedAt string           `json:"committed_at"`
	EntryCount  uint32           `json:"entry_count"`
	EntriesRoot string           `json:"entries_root,omitempty"`
	ClosedAt    string           `json:"closed_at,omitempty"`
	// After the draw started; winners: those recorded so far while
	// DRAWING (the draw's progress), all of them once DRAWN.
	Round      uint64  `json:"round,omitempty"`
	Randomness string  `json:"randomness,omitempty"`
	Signature  string  `json:"signature,omitempty"` // the beacon's, when the draw was given it
	DrawnAt    string  `json:"drawn_at,omitempty"`
	Winners    *uint32 `json:"winners,omitempty"`
	// After the draw is done.
	ServerSeed   string  `json:"server_seed,omitempty"`
	Seed         string  `json:"seed,omitempty"`
	WinnersRoot  string  `json:"winners_root,omitempty"`
	Waitlisted   *uint32 `json:"waitlisted,omitempty"`
	WaitlistRoot string  `json:"waitlist_root,omitempty"`
	Promoted     *uint32 `json:"promoted,omitempty"`
	// EndedAt is when the lottery ended (LOTTERY_ENDED: end_at passed
	// while entries could still win, who lost): absent before.
	EndedAt string `json:"ended_at,omitempty"`
}

type lotteryRulesBody struct {
	Version        string          `json:"version"`
	SaleLimit      uint32          `json:"sale_limit"`
	EntriesOpenAt  string          `json:"entries_open_at"`
	EntriesCloseAt string          `json:"entries_close_at"`
	Beacon         beaconRuleBody  `json:"beacon"`
	Waitlist       uint32          `json:"waitlist"`
	Tiers          []TierQuotaJSON `json:"tiers"`
}

type beaconRuleBody struct {
	Source            string `json:"source"`
	Round             uint64 `json:"round"`
	RoundTime         string `json:"round_time"`
	FallbackRound     uint64 `json:"fallback_round"`
	FallbackRoundTime string `json:"fallback_round_time"`
}

func hexOf(h lottery.Hash) string { return hex.EncodeToString(h[:]) }

// renderLottery renders the public lottery information.
func renderLottery(info sku.LotteryInfo) lotteryBody {
	r := info.Rules
	roundTime, _ := r.Beacon.TimeMs()
	fallbackTime, _ := r.Beacon.Fallback().TimeMs()
	body := lotteryBody{CampaignID: info.CampaignID, SKUID: info.SKUID, Phase: info.Phase.String(),
		Rules: lotteryRulesBody{Version: lottery.Version, SaleLimit: info.SaleLimit,
			EntriesOpenAt: timefmt.Millis(r.EntriesOpenAt), EntriesCloseAt: timefmt.Millis(r.EntriesCloseAt),
			Beacon: beaconRuleBody{Source: r.Beacon.Source, Round: r.Beacon.Round, RoundTime: timefmt.Millis(roundTime),
				FallbackRound: r.Beacon.Fallback().Round, FallbackRoundTime: timefmt.Millis(fallbackTime)},
			Waitlist: r.Waitlist, Tiers: tierQuotasJSON(r.Tiers)},
		Commit: hexOf(info.Commit), CommittedAt: timefmt.Millis(info.CommittedAt), EntryCount: info.EntryCount}
	if body.Rules.Tiers == nil {
		body.Rules.Tiers = []TierQuotaJSON{{Tier: 0, Quota: QuotaValue{Rest: true}}}
	}
	if info.Closed {
		body.EntriesRoot, body.ClosedAt = hexOf(info.EntriesRoot), timefmt.Millis(info.ClosedAt)
	}
	if info.Drawn {
		body.Round, body.Randomness, body.DrawnAt = info.Round, hexOf(info.Randomness), timefmt.Millis(info.DrawAt)
		body.Winners, body.Signature = &info.Winners, hex.EncodeToString(info.Signature)
	}
	if info.Done {
		body.ServerSeed, body.Seed = hexOf(info.ServerSeed), hexOf(info.Seed)
		body.WinnersRoot = hexOf(info.WinnersRoot)
		body.Waitlisted, body.WaitlistRoot = &info.Waitlisted, hexOf(info.WaitlistRoot)
		body.Promoted = &info.Promoted
	}
	if info.Ended {
		body.EndedAt = timefmt.Millis(info.EndedAt)
	}
	return body
}

// handleLotteryInfo is GET /v1/campaigns/{c}/skus/{s}/lottery: the public
// evidence (rules and commit from the start; the pool's root from the
// close; the server seed, the beacon value, the seed and the result roots
// after the draw). 404 for a SKU that is not a lottery.
func (s *Server) handleLotteryInfo(ctx *fasthttp.RequestCtx) string {
	info, rep, ok := s.lotteryInfo(ctx, "lottery_info")
	if !ok {
		return write(ctx, rep)
	}
	return write(ctx, jsonReply(fasthttp.StatusOK, outcomeOK, renderLottery(info)))
}

// frozenLottery returns the frozen state of the path's lottery SKU, or the
// answer to give.
func (s *Server) frozenLottery(ctx *fasthttp.RequestCtx, route string) (*sku.Frozen, reply, bool) {
	campaignID, skuID, ok := pathSKU(ctx)
	lots := s.lotteries
	if !ok || lots == nil {
		return nil, errorReply(reasonNotFound, ""), false
	}
	ectx, cancel := s.engineContext()
	f, err := lots.Frozen(ectx, campaignID, skuID)
	cancel()
	if err != nil {
		return nil, s.engineError(route, err, ""), false
	}
	if !f.Lottery() {
		return nil, errorReply(reasonNotFound, "not a lottery SKU"), false
	}
	return f, reply{}, true
}

func (s *Server) lotteryInfo(ctx *fasthttp.RequestCtx, route string) (sku.LotteryInfo, reply, bool) {
	f, rep, ok := s.frozenLottery(ctx, route)
	if !ok {
		return sku.LotteryInfo{}, rep, false
	}
	info, _ := f.LotteryInfo(s.cfg.Clock().UnixMilli())
	return info, reply{}, true
}

// drawRequest is the body of POST /admin/.../lottery/draw.
type drawRequest struct {
	Beacon struct {
		Round      uint64 `json:"round" jsonkeys:"required"`
		Randomness string `json:"randomness"`
		Signature  string `json:"signature"` // optional
	} `json:"beacon" jsonkeys:"required"`
}

// handleDraw is POST /admin/campaigns/{c}/skus/{s}/lottery/draw
// {"beacon":{"round":R,"randomness":"<64 hex digits>","signature":"<96 hex
// digits>"}}: 202 DRAW_STARTED once the inputs are fsynced (the ranking is
// recorded next; watch the phase at the status URL). The signature is
// optional; with it the randomness may be left out (it is SHA-256 of the
// signature), and the draw is refused unless the signature verifies under
// the beacon's public key for the round (lottery.CheckSignature). 400
// BAD_BEACON for randomness that is not 32 bytes of hex, or a signature
// that is not hex or does not check, 400 WRONG_ROUND for a round that is neither the named one
// nor its fallback; 409 ENTRIES_OPEN, BEACON_NOT_DUE (before the round's
// time) or ALREADY_DRAWN, nothing recorded.
func (s *Server) handleDraw(ctx *fasthttp.RequestCtx) string {
	campaignID, skuID, ok := pathSKU(ctx)
	lots := s.lotteries
	if !ok || lots == nil {
		return write(ctx, errorReply(reasonNotFound, ""))
	}
	var req drawRequest
	if err := decodeJSON(ctx.PostBody(), &req); err != nil {
		return write(ctx, bodyError(err))
	}
	signature, err := hex.DecodeString(req.Beacon.Signature)
	if err != nil {
		return write(ctx, errorReply(reasonBadBeacon, "beacon.signature must be hex"))
	}
	if req.Beacon.Randomness == "" && len(signature) > 0 {
		rnd := lottery.RandomnessOf(signature)
		req.Beacon.Randomness = hex.EncodeToString(rnd[:])
	}
	randomness, err := hex.DecodeString(req.Beacon.Randomness)
	if err != nil || len(randomness) != lottery.Size {
		return write(ctx, errorReply(reasonBadBeacon, "beacon.randomness must be 64 hex digits (32 bytes)"))
	}
	ectx, cancel := s.engineContext()
	o, err := lots.Draw(ectx, campaignID, skuID, req.Beacon.Round, randomness, signature)
	cancel()
	if err != nil {
		return write(ctx, s.engineError("admin_draw", err, lotteryURL(campaignID, skuID)))
	}
	reason := o.String()
	switch o {
	case sku.OutcomeDrawStarted:
		url := lotteryURL(campaignID, skuID)
		rep := reasonReply(reason, map[string]string{"outcome": reason, "status_url": url})
		rep.location = url
		return write(ctx, rep)
	case sku.OutcomeBeaconNotDue:
		return write(ctx, errorReply(reason, s.beaconDue(ctx, req.Beacon.Round)))
	case sku.OutcomeEntriesOpen, sku.OutcomeAlreadyDrawn, sku.OutcomeNotLottery:
		return write(ctx, errorReply(reason, ""))
	case sku.OutcomeEnded:
		return write(ctx, errorReply(reason, "the lottery has ended undrawn (its end_at passed before a draw): every entry lost; to draw later, extend end_at before it passes"))
	case sku.OutcomeWrongRound:
		return write(ctx, errorReply(reason, "the round must be the one the rules name or its stated fallback"))
	case sku.OutcomeInvalid: // the signature (lottery.CheckSignature): the length was checked above
		return write(ctx, errorReply(reasonBadBeacon, "beacon.signature does not verify under the beacon's public key for the round, or the randomness is not its SHA-256"))
	case sku.OutcomeNotFound:
		return write(ctx, errorReply(reasonNotFound, ""))
	}
	s.log.Error("draw: unexpected outcome", "outcome", reason)
	return write(ctx, errorReply(reasonInternal, ""))
}

// beaconDue is the detail of BEACON_NOT_DUE: when round of the SKU's
// beacon is published (RFC 3339, UTC), the earliest time a draw with it
// is taken; "" when the SKU's rules cannot be read.
func (s *Server) beaconDue(ctx *fasthttp.RequestCtx, round uint64) string {
	info, _, ok := s.lotteryInfo(ctx, "admin_draw")
	if !ok {
		return ""
	}
	due, err := lottery.RoundTimeMs(info.Rules.Beacon.Source, round)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("beacon round %d of %s is published at %s: draw with it at or after that time", round, info.Rules.Beacon.Source, timefmt.Millis(due))
}

// reasonBadBeacon answers a draw whose randomness is not 32 bytes of hex.
const reasonBadBeacon = "BAD_BEACON"

// handleEntriesCSV is GET /admin/campaigns/{c}/skus/{s}/lottery/entries.csv:
// the canonical pool, one line "entry_seq,pseudonym_hex,tier" per entry:
// once the entries are closed, exactly the bytes entries_root hashes
// (X-Entries-Root carries it). The lines are made off the actor.
func (s *Server) handleEntriesCSV(ctx *fasthttp.RequestCtx) string {
	f, rep, ok := s.frozenLottery(ctx, "admin_entries_csv")
	if !ok {
		return write(ctx, rep)
	}
	var buf bytes.Buffer
	if _, err := f.WritePool(&buf); err != nil {
		return write(ctx, errorReply(reasonInternal, ""))
	}
	info, _ := f.LotteryInfo(s.cfg.Clock().UnixMilli())
	if info.Closed {
		ctx.Response.Header.Set("X-Entries-Root", hexOf(info.EntriesRoot))
	}
	sum := sha256.Sum256(buf.Bytes())
	ctx.Response.Header.Set("X-Pool-SHA256", hex.EncodeToString(sum[:]))
	ctx.Response.Header.Set("X-Entry-Count", strconv.FormatUint(uint64(info.EntryCount), 10))
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("text/csv; charset=utf-8")
	ctx.SetBody(buf.Bytes())
	return outcomeOK
}
