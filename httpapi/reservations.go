package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/internal/timefmt"
	"github.com/valyala/fasthttp"
)

// requestBody renders what became of a reserve request.
type requestBody struct {
	RequestID string `json:"request_id"`
	// Outcome is the durable answer: ACCEPTED, SOLD_OUT or ALREADY_PURCHASED.
	Outcome string `json:"outcome"`
	// ReservationID is the reservation made (ACCEPTED) or the one the user
	// already holds (ALREADY_PURCHASED).
	ReservationID string            `json:"reservation_id,omitempty"`
	Reservation   *feed.Reservation `json:"reservation,omitempty"`
}

// paymentRequest is the body of a payment callback.
type paymentRequest struct {
	PaymentID string      `json:"payment_id" jsonkeys:"required"`
	Amount    *minorUnits `json:"amount"`
	// ReservationID, when given (even ""), must name the reservation of
	// the path (400 RESERVATION_MISMATCH otherwise); null is not given.
	// Signed callbacks must give it, so that a signed body cannot be
	// replayed on another reservation.
	ReservationID *string `json:"reservation_id"`
}

// minorUnits is an amount of money in minor units: a JSON integer from 0
// to math.MaxInt64. Anything else is refused while decoding, with an
// UnmarshalTypeError that jsonKind renders with that range.
type minorUnits int64

// UnmarshalJSON reads a JSON integer from 0 to math.MaxInt64; null
// leaves m as it is (encoding/json's convention).
func (m *minorUnits) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	n, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil || n < 0 {
		return &json.UnmarshalTypeError{Value: jsonValueKind(data), Type: reflect.TypeFor[minorUnits]()}
	}
	*m = minorUnits(n)
	return nil
}

// stateBody answers pay and cancel.
type stateBody struct {
	ReservationID string `json:"reservation_id"`
	State         string `json:"state"`
	PaymentID     string `json:"payment_id,omitempty"`
	PaidAt        string `json:"paid_at,omitempty"`
	ClosedReason  string `json:"closed_reason,omitempty"`
}

// engineContext bounds one engine call by the request timeout.
func (s *Server) engineContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.cfg.RequestTimeout)
}

// engineError encodes an engine error; statusURL is given with a 504.
func (s *Server) engineError(route string, err error, statusURL string) reply {
	f := classify(err)
	if f.unknown {
		return s.resultUnknown(statusURL)
	}
	if f.reason == reasonInternal {
		s.log.Error("engine call failed", "route", route, "err", err)
	}
	return s.failureReply(f, err)
}

// readError answers the error of a read: like engineError, except that a
// read that did not get its answer in time changed nothing, so it is a 503
// READ_TIMEOUT (or AUDIT_PENDING) with Retry-After, never RESULT_UNKNOWN.
func (s *Server) readError(route string, err error) reply {
	switch {
	case errors.Is(err, actors.ErrAuditPending):
		return errorReply(reasonAuditPending, "the recount goes on; retry to get its result")
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return errorReply(reasonReadTimeout, "the SKU did not answer in time; nothing was changed")
	}
	return s.engineError(route, err, "")
}

// handleGet is GET /v1/reservations/{id}.
func (s *Server) handleGet(ctx *fasthttp.RequestCtx) string {
	id, ok := pathReservation(ctx)
	if !ok {
		return write(ctx, errorReply(reasonNotFound, ""))
	}
	ectx, cancel := s.engineContext()
	v, err := s.engine.Get(ectx, id)
	cancel()
	if err != nil {
		return write(ctx, s.readError("get_reservation", err))
	}
	// A reservation changes (paid, closed) and names a user: no shared
	// cache may keep it, and a client asks again each time.
	ctx.Response.Header.Set("Cache-Control", "private, no-cache")
	return write(ctx, reservationReply(v))
}

// handleLookup is GET /v1/campaigns/{c}/skus/{s}/requests/{request_id}.
func (s *Server) handleLookup(ctx *fasthttp.RequestCtx) string {
	campaignID, skuID, ok := pathSKU(ctx)
	requestID := pathParam(ctx, "request_id")
	if !ok || !sku.ValidID(requestID) {
		return write(ctx, errorReply(reasonNotFound, ""))
	}
	ectx, cancel := s.engineContext()
	res, err := s.engine.Lookup(ectx, campaignID, skuID, requestID)
	cancel()
	if err != nil {
		return write(ctx, s.readError("lookup_request", err))
	}
	ctx.Response.Header.Set("Cache-Control", "private, no-cache") // the reservation it names changes
	return write(ctx, lookupReply(requestID, res))
}

// lookupReply is the answer of a request_id lookup that found res.
func lookupReply(requestID string, res sku.Result) reply {
	body := requestBody{RequestID: requestID, Outcome: res.Outcome.String(), ReservationID: res.Reservation.ReservationID}
	if res.Outcome == sku.OutcomeAccepted {
		r := feed.NewReservation(res.Reservation)
		body.Reservation = &r
	}
	return jsonReply(fasthttp.StatusOK, body.Outcome, body)
}

// reservationReply is the answer of a reservation read that found v.
func reservationReply(v sku.View) reply {
	return jsonReply(fasthttp.StatusOK, v.State.String(), feed.NewReservation(v))
}

// unsigned is the 401 of a payment without a valid signature. Its
// WWW-Authenticate challenge (RFC 9110, section 11.6.1) names the scheme: an
// HMAC-SHA256 of the body in the X-Signature header.
func unsigned(ctx *fasthttp.RequestCtx, detail string) reply {
	ctx.Response.Header.Set("WWW-Authenticate", `X-Signature realm="seckill-payments", algorithm="HMAC-SHA256"`)
	return errorReply(reasonUnauthorized, detail)
}

// handlePay is POST /v1/reservations/{id}/payment.
func (s *Server) handlePay(ctx *fasthttp.RequestCtx) string {
	body := ctx.PostBody()
	if !s.signatureOK(body, ctx.Request.Header.Peek("X-Signature")) {
		return write(ctx, unsigned(ctx, "missing or wrong X-Signature"))
	}
	id, ok := pathReservation(ctx)
	if !ok {
		return write(ctx, errorReply(reasonNotFound, ""))
	}
	var req paymentRequest
	if err := decodeJSON(body, &req); err != nil {
		return write(ctx, bodyError(err))
	}
	if bad := checkID("payment_id", req.PaymentID); bad != "" {
		return write(ctx, errorReply(reasonBadRequest, bad))
	}
	if req.ReservationID != nil && *req.ReservationID != id {
		return write(ctx, errorReply(reasonReservationMismatch,
			"reservation_id of the body differs from the path"))
	}
	if len(s.cfg.PaymentSecret) > 0 && req.ReservationID == nil {
		return write(ctx, unsigned(ctx, "a signed payment body must name the reservation of the path in reservation_id"))
	}
	var amount int64
	if req.Amount != nil {
		amount = int64(*req.Amount)
	}
	ectx, cancel := s.engineContext()
	res, err := s.engine.Pay(ectx, id, req.PaymentID, amount)
	cancel()
	if err != nil {
		return write(ctx, s.engineError("pay", err, ReservationURL(id)))
	}
	reason := res.Outcome.String()
	switch res.Outcome {
	case sku.OutcomePaid, sku.OutcomeAlreadyPaid:
		v := res.Reservation
		return write(ctx, reasonReply(sku.StatePaid.String(), stateBody{
			ReservationID: id, State: sku.StatePaid.String(), PaymentID: v.PaymentID, PaidAt: timefmt.OptionalMillis(v.PaidAt),
		}))
	case sku.OutcomeRefundRequired, sku.OutcomePaymentConflict:
		return write(ctx, reasonReply(reason, errorBody{Error: reason, ReservationID: id}))
	case sku.OutcomePaymentIDReused:
		return write(ctx, errorReply(reason, "this payment_id was recorded on the reservation with another amount: a repeat must carry the same amount"))
	case sku.OutcomeNotFound:
		return write(ctx, errorReply(reasonNotFound, ""))
	}
	s.log.Error("pay: unexpected outcome", "outcome", reason)
	return write(ctx, errorReply(reasonInternal, ""))
}

// bodylessCommand runs command (named name in the log) on the reservation
// the path names, for a route whose body is optional and carries nothing
// (empty or {}). When it answered already (no such reservation, a body
// with fields, an engine error) it returns that answer's outcome label as
// answered; otherwise the engine's result, for the caller to answer.
func (s *Server) bodylessCommand(ctx *fasthttp.RequestCtx, name string,
	command func(context.Context, string) (sku.Result, error)) (id string, res sku.Result, answered string) {
	id, ok := pathReservation(ctx)
	if !ok {
		return id, res, write(ctx, errorReply(reasonNotFound, ""))
	}
	if err := decodeNoFields(ctx.PostBody()); err != nil {
		return id, res, write(ctx, bodyError(err))
	}
	ectx, cancel := s.engineContext()
	res, err := command(ectx, id)
	cancel()
	if err != nil {
		return id, res, write(ctx, s.engineError(name, err, ReservationURL(id)))
	}
	return id, res, ""
}

// handleCancel is POST /v1/reservations/{id}/cancel. Its body is optional
// and carries nothing: empty or {}.
func (s *Server) handleCancel(ctx *fasthttp.RequestCtx) string {
	id, res, answered := s.bodylessCommand(ctx, "cancel", s.engine.Cancel)
	if answered != "" {
		return answered
	}
	reason := res.Outcome.String()
	switch res.Outcome {
	case sku.OutcomeClosed, sku.OutcomeAlreadyClosed:
		return write(ctx, reasonReply(sku.StateClosed.String(), stateBody{
			ReservationID: id, State: sku.StateClosed.String(), ClosedReason: res.Reservation.CloseReason.String(),
		}))
	case sku.OutcomeNotClosable:
		return write(ctx, reasonReply(reason, errorBody{Error: reason, ReservationID: id}))
	case sku.OutcomeNotFound:
		return write(ctx, errorReply(reasonNotFound, ""))
	}
	s.log.Error("cancel: unexpected outcome", "outcome", reason)
	return write(ctx, errorReply(reasonInternal, ""))
}

// releaseBody answers an operator's release.
type releaseBody struct {
	ReservationID string `json:"reservation_id"`
	Outcome       string `json:"outcome"` // RELEASED or ALREADY_RELEASED
	TokenID       uint32 `json:"token_id"`
}

// handleRelease is POST /admin/reservations/{id}/release: the token of a
// CLOSED reservation that still holds it (a campaign with
// release_on_close=false) goes back to the pool. Idempotent; a paid
// reservation's token is never released (409 NOT_CLOSABLE), a pending one
// must be closed first (409 NOT_CLOSED). Its body is optional and carries
// nothing: empty or {}.
func (s *Server) handleRelease(ctx *fasthttp.RequestCtx) string {
	id, res, answered := s.bodylessCommand(ctx, "release", s.engine.Release)
	if answered != "" {
		return answered
	}
	reason := res.Outcome.String()
	switch res.Outcome {
	case sku.OutcomeReleased, sku.OutcomeAlreadyReleased:
		return write(ctx, reasonReply(reason, releaseBody{ReservationID: id, Outcome: reason, TokenID: res.Reservation.TokenID}))
	case sku.OutcomeNotClosable, sku.OutcomeNotClosed:
		return write(ctx, reasonReply(reason, errorBody{Error: reason, ReservationID: id}))
	case sku.OutcomeNotFound:
		return write(ctx, errorReply(reasonNotFound, ""))
	}
	s.log.Error("release: unexpected outcome", "outcome", reason)
	return write(ctx, errorReply(reasonInternal, ""))
}
