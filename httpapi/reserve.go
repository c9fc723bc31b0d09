package httpapi

import (
	"encoding/json"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/admission"
	"github.com/seckill/seckill/internal/timefmt"
	"github.com/valyala/fasthttp"
)

// reserveRequest is the body of POST .../reservations.
type reserveRequest struct {
	RequestID string `json:"request_id"`
	UserID    string `json:"user_id"`
	// EntryPass is the buyer's entry pass, empty for none: a
	// view into the body or the parser's buffer (reserveDecoder). With a pass,
	// request_id may be left out: it is the pass's.
	EntryPass []byte `json:"entry_pass"`
}

// acceptedBody is the 202 answer. It describes the acceptance, so a repeat
// of the request_id gets the very same body; the reservation's current
// state is at status_url.
type acceptedBody struct {
	ReservationID string `json:"reservation_id"`
	RequestID     string `json:"request_id"`
	State         string `json:"state"`
	TokenID       uint32 `json:"token_id"`
	ExpireAt      string `json:"expire_at"`
	StatusURL     string `json:"status_url"`
}

// handleReserve is POST /v1/campaigns/{c}/skus/{s}/reservations: decode,
// validate, run the ingress pipeline, encode. k's ids are the path's, ok
// whether they are valid (pathSKU; the fast route's are, reserveroute.go);
// arrived is when the request was routed (time.Now).
func (s *Server) handleReserve(ctx *fasthttp.RequestCtx, k *reserveTarget, ok bool, arrived time.Time) string {
	if !ok {
		s.rejected(layerValidation)
		return write(ctx, errorReply(reasonNotFound, "no such SKU"))
	}
	// One lookup of the SKU's published stats and one clock reading serve
	// the lottery refusal, the entry-pass check and the flight leader's
	// fast paths (a reserve that waits behind another flight takes fresh
	// ones: Server.reserve).
	var st actors.Stats
	in, rep, ok := s.reserveDoor(ctx.PostBody(), k.campaignID, k.skuID, &st)
	if !ok {
		return write(ctx, rep)
	}
	in.arrived = arrived
	return write(ctx, s.reserve(&st, &in, k))
}

// doorPassed is a reserve that passed its door (reserveDoor): the clock
// reading its checks used (the server's clock, Config.Clock), when it
// arrived (the wall clock, time.Now: its wait for the engine counts from
// then), its user and what its entry pass gave.
type doorPassed struct {
	now     time.Time
	arrived time.Time
	userID  string
	pass    passed
	views   bool // userID and pass.requestID are views into the body (own)
}

// reserveDoor runs the checks of a reserve before the answer cache: its
// body and ids, the SKU (its published stats go to st), the user's cell
// (checkCell), the lottery refusal and the entry pass. It holds the body's decoder until the pass is
// verified, which reads the pass in place. ok is false with rep the
// refusal.
func (s *Server) reserveDoor(body []byte, campaignID, skuID string, st *actors.Stats) (in doorPassed, rep reply, ok bool) {
	d := reserveDecoder{views: true}
	defer d.release()
	req, err := d.decode(body)
	if err != nil {
		s.rejected(layerValidation)
		return in, bodyError(err), false
	}
	bad := checkRequestID(req.RequestID, len(req.EntryPass) > 0)
	if bad == "" {
		bad = checkID("user_id", req.UserID)
	}
	if bad != "" {
		s.rejected(layerValidation)
		return in, errorReply(reasonBadRequest, bad), false
	}
	var known bool
	if *st, known = s.engine.SKUStats(campaignID, skuID); !known {
		s.rejected(layerValidation)
		return in, errorReply(reasonNotFound, "no such SKU"), false
	}
	if rep, refused := s.checkCell(campaignID, skuID, req.UserID); refused {
		return in, rep, false
	}
	if st.Definition.Lottery != nil {
		s.rejected(layerValidation)
		return in, replyLotterySale, false
	}
	in.now, in.userID, in.views = s.cfg.Clock(), req.UserID, d.viewed
	in.pass, rep, ok = s.checkEntryPassAt(st.Definition, campaignID, skuID, req.RequestID, req.UserID, req.EntryPass, in.now)
	return in, rep, ok
}

// checkRequestID checks a reserve's request_id: an id, or left out when
// the request carries an entry pass (withPass), which gives it.
func checkRequestID(requestID string, withPass bool) string {
	if requestID == "" && withPass {
		return ""
	}
	return checkID("request_id", requestID)
}

// reserve runs one reserve of k, a SKU the engine knows, that passed its
// door (in.pass: its request_id and what its entry pass vouched for, zero
// without one), through the ingress layers: the answer cache, the user's
// flight, the fast paths and admission, then the engine. st and in.now are
// the SKU's stats and the clock as the request found them; a request that
// waits behind another flight of its user reads both again, and its wait
// for the engine counts from then (in.arrived).
func (s *Server) reserve(st *actors.Stats, in *doorPassed, k *reserveTarget) reply {
	campaignID, skuID, requestID, userID := k.campaignID, k.skuID, in.pass.requestID, in.userID
	rkey := requestKey(campaignID, skuID, requestID)
	ukey := userKey(campaignID, skuID, userID)
	// Waiting behind the user's other requests is bounded by one request
	// timeout in all; the wait loop runs once per flight that finishes.
	var wait flightWait
	defer wait.stop()
	for {
		retryOfUnknown := false
		if a, ok := s.answers.get(rkey); ok {
			if a.userID != userID {
				s.rejected(layerDedup)
				return replyRequestIDReused
			}
			if !a.unknown {
				s.rejected(layerDedup)
				return a.rep
			}
			retryOfUnknown = true
		}
		// A refusal at the door (sold out, the sale window, a pause,
		// unavailable) reaches no engine, so with no request of the user
		// in flight it needs no flight of its own: the flood of a sold-out
		// SKU costs one look at the user's flights, not a flight made and
		// ended. With one in flight the request waits for it as any other.
		v := s.doorVerdict(st, in, k, retryOfUnknown)
		if v != verdictAdmit && !s.flights.busy(ukey) {
			rep, _ := s.fastRefusal(v, st, in.now)
			return rep
		}
		if in.views { // a flight, the answer cache and the engine keep the ids
			in.own()
			requestID, userID = in.pass.requestID, in.userID
			rkey, ukey = rkey.owned(requestID), ukey.owned(userID) // the same text: the same hashes
		}
		fl, leader := s.flights.join(ukey, requestID)
		if leader {
			rep, shared := s.lead(rkey, v, st, in, k, retryOfUnknown)
			s.flights.finish(ukey, fl, rep, shared)
			return rep
		}
		if !wait.done(fl, s.cfg.RequestTimeout) {
			// The user's requests ahead did not finish in time.
			if fl.requestID == requestID {
				s.answers.markUnknown(rkey, userID)
				return s.resultUnknown(LookupURL(campaignID, skuID, requestID))
			}
			s.rejected(layerQueueFull)
			return s.queueFull()
		}
		if fl.requestID == requestID && fl.shared {
			s.rejected(layerDedup)
			return fl.rep
		}
		// Another request_id of the same user finished, or ours with an
		// answer that may be stale by now (ALREADY_PURCHASED while a cancel
		// completed meanwhile): ask again (the cache, then a flight of our
		// own) on the SKU's state and the clock as they are now.
		fresh, known := s.engine.SKUStats(campaignID, skuID)
		if !known {
			s.rejected(layerValidation)
			return errorReply(reasonNotFound, "no such SKU")
		}
		st, in.now, in.arrived = &fresh, s.cfg.Clock(), time.Now()
	}
}

// flightWait is a reserve's wait behind its user's flights: one timer
// for all of them, made by the first wait (most reserves never wait). A
// type of its own, stopped by one defer outside the wait loop: a defer in
// the loop would make every reserve pay for the runtime's general defer
// handling on its way out, waited or not.
type flightWait struct{ t *time.Timer }

// done waits for fl and reports whether it finished before timeout ran out
// since the first wait.
func (w *flightWait) done(fl *flight, timeout time.Duration) bool {
	if w.t == nil {
		w.t = time.NewTimer(timeout)
	}
	select {
	case <-fl.done:
		return true
	case <-w.t.C:
		return false
	}
}

// stop stops the timer, if a wait made it.
func (w *flightWait) stop() {
	if w.t != nil {
		w.t.Stop()
	}
}

// lead is the reserve of the flight's leader: fast paths on the SKU's
// published durable stats st at in.now (v, the door's verdict on them a
// moment ago), a permit, then the engine. shared
// reports an answer that a repeat of the request_id, sent while this one
// was in flight, may get too: one that is final for the request_id (ACCEPTED, the
// engine's recorded SOLD_OUT, REQUEST_ID_REUSED) or decides nothing
// (QUEUE_FULL, THROTTLED, RESULT_UNKNOWN). The others hold only at the moment they
// were decided (ALREADY_PURCHASED, a fast-path SOLD_OUT, the sale window):
// the repeat, which may have been sent after the state changed, asks again
// (found by the porcupine linearizability test).
func (s *Server) lead(rkey dedupKey, v verdict, st *actors.Stats, in *doorPassed, k *reserveTarget, retryOfUnknown bool) (rep reply, shared bool) {
	campaignID, skuID, requestID, userID, holder, now := k.campaignID, k.skuID, in.pass.requestID, in.userID, in.pass.holder, in.now
	// An admission stays one (st and now are the same; the request filter
	// only learns request_ids), but a refusal is asked again: the flight
	// of the user that ended since may have decided this request_id, which
	// then needs its original answer from the engine (doorVerdict).
	if v != verdictAdmit {
		v = s.doorVerdict(st, in, k, retryOfUnknown)
	}
	if rep, refused := s.fastRefusal(v, st, now); refused {
		return rep, false
	}
	// Out of permits is busy, not sold out, even when the stock term
	// binds: requests in flight may still be refused (a holder clicking
	// again, a reused request_id) and leave the units to this buyer. Only
	// a durable available of 0 (the precheck above) is SOLD_OUT.
	g := k.gate
	if g == nil {
		g = s.gates.get(campaignID, skuID)
	}
	d := s.limits.decide(st, g)
	if refusal, ok := g.admit(d); !ok {
		return s.busy(refusal, d), true
	}
	defer g.release()

	var res sku.Result
	var err error
	deadline := s.deadlines.getAt(in.arrived)
	// The zero holder is a reserve without a pass: one call for both.
	res, err = s.engine.ReserveWith(deadline, campaignID, skuID, requestID, userID, holder)
	if err != nil {
		f := classify(err)
		if f.unknown {
			s.answers.markUnknown(rkey, userID)
			return s.resultUnknown(LookupURL(campaignID, skuID, requestID)), true
		}
		if f.reason == reasonInternal {
			s.log.Error("reserve failed", "campaign_id", campaignID, "sku_id", skuID, "err", err)
		}
		return s.failureReply(f, err), false
	}
	rep, cache := s.reserveReply(&res)
	if res.Outcome == sku.OutcomeSoldOut && st.Definition.Cell != "" {
		rep, cache = s.soldOutReply(*st), false // a cell's SOLD_OUT is never final (cell.go)
	}
	if cache {
		s.answers.putFinal(rkey, userID, rep)
	}
	return rep, cache || res.Outcome == sku.OutcomeAccepted || res.Outcome == sku.OutcomeRequestIDReused
}

// doorVerdict is the ingress's verdict on a reserve of k at in.now on the
// SKU's stats st (precheck). A request_id the SKU may have decided already
// must get its original answer from the engine, not a fast SOLD_OUT or
// ENDED (one request_id, one result, also after a restart or a cache
// eviction). Only the sale gate's refusals depend on it: the request
// filter is asked then.
func (s *Server) doorVerdict(st *actors.Stats, in *doorPassed, k *reserveTarget, retryOfUnknown bool) verdict {
	v := s.limits.precheck(st, in.now, retryOfUnknown)
	if v.gateRefusal() && s.engine.MayKnowRequest(k.campaignID, k.skuID, in.pass.requestID) {
		v = s.limits.precheck(st, in.now, true)
	}
	return v
}

// reserveReply encodes the engine's answer to a reserve. cache is set for
// the answers kept in the answer cache: SOLD_OUT, which the engine made
// durable for this request_id and which a repeat of it always gets.
// ACCEPTED is just as final, but it is not cached: its repeats are few and
// the engine answers them from its request index, while caching it would
// put an LRU insert on the path of every sale. ALREADY_PURCHASED is not
// final: it holds while the user's purchase is live.
func (s *Server) reserveReply(res *sku.Result) (rep reply, cache bool) {
	reason := res.Outcome.String()
	switch res.Outcome {
	case sku.OutcomeAccepted:
		v := &res.Reservation
		rep = reply{status: statusAccepted, outcome: reason, reservation: v.ReservationID,
			accepted: acceptedAnswer{requestID: v.RequestID, tokenID: v.TokenID, expireAt: v.ExpireAt}}
		return rep, false
	case sku.OutcomeSoldOut:
		return replySoldOut, true
	case sku.OutcomeAlreadyPurchased:
		return alreadyPurchasedReply(res.Reservation.ReservationID), false
	case sku.OutcomeAlreadyEntered:
		return alreadyEnteredReply(res.Entered), false
	case sku.OutcomeRequestIDReused:
		return replyRequestIDReused, false
	case sku.OutcomeSubjectLimit:
		// Not final: it holds while the subject's unpaid reservations do.
		return replySubjectLimit, false
	case sku.OutcomeNotStarted, sku.OutcomeEnded:
		return errorReply(reason, ""), false
	case sku.OutcomePaused:
		return replyPaused, false
	case sku.OutcomeNotFound:
		return errorReply(reasonNotFound, ""), false
	case sku.OutcomeLotterySale:
		return replyLotterySale, false
	}
	s.log.Error("reserve: unexpected outcome", "outcome", reason)
	return errorReply(reasonInternal, ""), false
}

// statusAccepted is ACCEPTED's status, looked up once: every sale answers it.
var statusAccepted = StatusOf(sku.OutcomeAccepted.String())

// alreadyPurchasedReply is 409 ALREADY_PURCHASED: the user holds the live
// purchase reservationID, on a reserve or a lottery entry. It names the
// reservation and its SKU (with purchase_limit "campaign" another SKU than
// the one asked).
func alreadyPurchasedReply(reservationID string) reply {
	reason := sku.OutcomeAlreadyPurchased.String()
	_, skuID, _, _, _ := sku.ParseReservationID(reservationID)
	return reasonReply(reason, errorBody{Error: reason, ReservationID: reservationID, SKUID: skuID})
}

// The fixed answers of the ingress fast paths, encoded once: the sold-out
// flood costs no JSON encoding.
var (
	replyUnavailable     = errorReply(ReasonUnavailable, "")
	replyEnded           = errorReply(reasonEnded, "")
	replyPaused          = errorReply(reasonPaused, "")
	replySoldOut         = errorReply(reasonSoldOut, "")
	replyRequestIDReused = errorReply(sku.OutcomeRequestIDReused.String(),
		"this request_id was used by another user or with other parameters: a new request needs a new request_id")
	replyQueueFull = errorReply(reasonQueueFull, "")
	replyThrottled = errorReply(reasonThrottled,
		"the SKU's log commits too slowly for max_queue_wait, or has just recovered and admits in steps")
	replyLotterySale  = errorReply(reasonLotterySale, "this SKU is sold by lottery: POST an entry instead")
	replySubjectLimit = errorReply(sku.OutcomeSubjectLimit.String(),
		"a subject of the entry pass has the most unpaid reservations this SKU allows")
	// replyEntrySubjectLimit is a lottery entry's SUBJECT_LIMIT: every
	// entry may win an unpaid reservation, so the cap counts entries.
	replyEntrySubjectLimit = errorReply(sku.OutcomeSubjectLimit.String(),
		"a subject of the entry pass has as many entries as this lottery allows unpaid reservations")
)

// notStarted is the 403 NOT_STARTED answer at now of a SKU that opens at
// startAt (Unix ms): the body gives start_at, Retry-After the seconds
// until then. Built without encoding/json: a crowd clicking early gets it.
func notStarted(startAt int64, now time.Time) reply {
	b := make([]byte, 0, 64)
	b = append(b, `{"error":"NOT_STARTED","start_at":"`...)
	b = timefmt.AppendMillis(b, startAt)
	b = append(b, `"}`...)
	return reply{status: StatusOf(reasonNotStarted), body: b, outcome: reasonNotStarted,
		retryAfter: retryAfterSeconds(time.UnixMilli(startAt).Sub(now))}
}

// queueFull is the 429 answer, with Retry-After: the queue drains within
// max_queue_wait.
func (s *Server) queueFull() reply {
	rep := replyQueueFull
	rep.retryAfter = s.retryAfter
	return rep
}

// busy is the 429 answer of a reserve admission refused (d, refusal),
// counted by layer: QUEUE_FULL, or THROTTLED while the SKU's commits are
// (or were just) too slow for max_queue_wait, whose Retry-After is the
// wait admission judged, at least max_queue_wait's.
func (s *Server) busy(refusal admission.State, d admission.Decision) reply {
	if refusal != admission.Throttled {
		s.rejected(layerQueueFull)
		return s.queueFull()
	}
	s.rejected(layerThrottled)
	rep := replyThrottled
	rep.retryAfter = retryAfterSeconds(max(d.Wait, s.limits.MaxQueueWait))
	return rep
}

// resultUnknown is the 504 answer: the engine did not answer in time; the
// command may or may not have been applied. statusURL says where to look.
func (s *Server) resultUnknown(statusURL string) reply {
	return reply{status: StatusOf(ReasonResultUnknown), outcome: ReasonResultUnknown, body: ResultUnknownBody(statusURL, "")}
}

// ResultUnknownBody is the body of a 504 RESULT_UNKNOWN: the command may
// or may not have been applied; statusURL (omitted when "") says where to
// look, detail (omitted when "") why it is unknown. seckill-router answers
// it too, for a request a cell may have received and never answered.
func ResultUnknownBody(statusURL, detail string) []byte {
	b, err := json.Marshal(errorBody{Error: ReasonResultUnknown, Detail: detail, StatusURL: statusURL})
	if err != nil {
		panic("httpapi: encoding RESULT_UNKNOWN: " + err.Error()) // strings always encode
	}
	return b
}

// rejected counts a reserve answered by an ingress layer.
func (s *Server) rejected(layer ingressLayer) {
	s.metrics.rejectedBy[layer].Inc()
}

// reservationURLPrefix starts the status URL of every reservation.
const reservationURLPrefix = "/v1/reservations/"

// ReservationURL is the status URL of a reservation.
func ReservationURL(reservationID string) string {
	return reservationURLPrefix + reservationID
}

// LookupURL is the status URL of a reserve request.
func LookupURL(campaignID, skuID, requestID string) string {
	return "/v1/campaigns/" + campaignID + "/skus/" + skuID + "/requests/" + requestID
}

// fastRefusal is the answer at the door for the ingress's verdict on a
// reserve (precheck), counted by layer; refused is false for
// verdictAdmit. A single reserve (lead) and each batch item
// (batchItemIngress) answer through it.
func (s *Server) fastRefusal(v verdict, st *actors.Stats, now time.Time) (rep reply, refused bool) {
	switch v {
	case verdictUnavailable:
		s.rejected(layerPaused)
		return replyUnavailable, true
	case verdictNotStarted:
		s.rejected(layerWindow)
		return notStarted(st.Definition.StartAt, now), true
	case verdictEnded:
		s.rejected(layerWindow)
		return replyEnded, true
	case verdictPaused:
		s.rejected(layerPaused)
		return replyPaused, true
	case verdictSoldOut:
		s.rejected(layerSoldOut)
		return s.soldOutReply(*st), true
	}
	return reply{}, false
}
