package actors

import (
	"context"

	"github.com/seckill/seckill/actors/core"

	"github.com/seckill/seckill/actors/sku"
)

// do posts c to the SKU actor and waits for its reply or for ctx. On ctx
// expiry the outcome is unknown to the caller (the actor may still decide
// and persist it): the caller retries with the same request_id or polls.
func (h *SKU) do(ctx context.Context, c *call) error {
	gen := c.gen()
	h.postAndRun(c)
	if d, ok := ctx.(*Deadline); ok { // its end abandons c: a plain receive
		if !d.enlist(c, gen) {
			c.abandon(gen) // it ended already (unless c was answered)
		}
		<-c.done
		if c.abandoned() {
			return ctx.Err() // the actor may still answer it
		}
		return nil
	}
	if ctx.Done() == nil { // no deadline: a plain receive is cheaper than select
		<-c.done
		return nil
	}
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return ctx.Err() // c is abandoned: the actor may still answer it
	}
}

// run sends a call to the named SKU and returns it answered; the caller
// frees it.
func (e *Engine) run(ctx context.Context, campaignID, skuID string, c *call) (*call, error) {
	h := e.SKU(campaignID, skuID)
	if h == nil {
		c.free()
		return nil, ErrUnknownSKU
	}
	return e.runOn(ctx, h, c)
}

// runReservation routes a call by reservation id.
func (e *Engine) runReservation(ctx context.Context, reservationID string, c *call) (*call, error) {
	campaignID, skuID, cell, seq, tag, err := sku.ParseCellReservationID(reservationID)
	if err != nil {
		c.free()
		return nil, err
	}
	c.IDCell, c.Seq, c.Tag = cell, seq, tag
	return e.run(ctx, campaignID, skuID, c)
}

func resultOf(c *call, err error) (sku.Result, error) {
	if err != nil {
		return sku.Result{}, err
	}
	res := c.Result
	c.free()
	if res.Outcome == sku.OutcomeInvalid {
		return res, ErrInvalidArgument
	}
	return res, nil
}

// Reserve asks for a token for userID, once per requestID (the idempotency
// key). The Result's Outcome is ACCEPTED, SOLD_OUT, ALREADY_PURCHASED,
// REQUEST_ID_REUSED, NOT_STARTED, ENDED or PAUSED; a repeated request_id
// gets its original result with Duplicate set. Errors: ErrUnknownSKU,
// ErrUnavailable, ErrInvalidArgument, ctx.Err() (result unknown).
//
// On a SKU of a campaign whose purchase_limit is "campaign" the user's
// live purchase may be on another SKU: ALREADY_PURCHASED then names it
// (Reservation.ReservationID, not recorded); a reserve that waited for
// the user's reserve on another SKU beyond ctx, or found too many waiting,
// is ErrBusy (nothing decided); ErrUnavailable when a lost answer of the
// user's could not be looked up (reserveScoped).
func (e *Engine) Reserve(ctx context.Context, campaignID, skuID, requestID, userID string) (sku.Result, error) {
	return e.ReserveWith(ctx, campaignID, skuID, requestID, userID, sku.Holder{})
}

// ReserveWith is Reserve for a buyer an entry pass vouched for (Reserve is
// ReserveWith with the zero holder): holder (tier, risk, subject keys) is
// recorded with the reservation and counted against max_unpaid_per_subject
// (sku.Machine.ReserveWith). It may also answer SUBJECT_LIMIT; a malformed
// holder is ErrInvalidArgument.
//
// A reserve on a SKU of a campaign-scope campaign runs behind the user's
// claim (reserveScoped). Otherwise the answer is copied once, from the
// call into the result: a Result is about 250 bytes, and every layer
// returning it by value would copy it again.
func (e *Engine) ReserveWith(ctx context.Context, campaignID, skuID, requestID, userID string, holder sku.Holder) (res sku.Result, err error) {
	c := newCall(core.KindReserve)
	c.RequestID, c.UserID, c.Holder = requestID, userID, holder
	h := e.SKU(campaignID, skuID)
	if h == nil {
		c.free()
		return res, ErrUnknownSKU
	}
	if h.claimsFor(false) {
		return e.reserveScoped(ctx, h, c)
	}
	if _, err = e.runOn(ctx, h, c); err != nil {
		return res, err
	}
	res = c.Result
	c.free()
	if res.Outcome == sku.OutcomeInvalid {
		err = ErrInvalidArgument
	}
	return
}

// Pay records payment paymentID (amount in minor units) for a reservation:
// PAID, ALREADY_PAID, PAYMENT_CONFLICT, REFUND_REQUIRED or NOT_FOUND.
func (e *Engine) Pay(ctx context.Context, reservationID, paymentID string, amount int64) (sku.Result, error) {
	c := newCall(core.KindPay)
	c.PaymentID, c.Amount = paymentID, amount
	return resultOf(e.runReservation(ctx, reservationID, c))
}

// Cancel closes a PENDING_PAYMENT reservation: CLOSED, ALREADY_CLOSED,
// NOT_CLOSABLE (paid) or NOT_FOUND.
func (e *Engine) Cancel(ctx context.Context, reservationID string) (sku.Result, error) {
	return e.CloseReservation(ctx, reservationID, sku.ReasonCancelled)
}

// CloseReservation closes a reservation for reason; ReasonExpired before expire_at
// answers NOT_EXPIRED and changes nothing.
func (e *Engine) CloseReservation(ctx context.Context, reservationID string, reason sku.CloseReason) (sku.Result, error) {
	c := newCall(core.KindClose)
	c.Reason = reason
	return resultOf(e.runReservation(ctx, reservationID, c))
}

// Release returns the token of a CLOSED reservation that still holds it:
// RELEASED, ALREADY_RELEASED, NOT_CLOSED, NOT_CLOSABLE (paid) or NOT_FOUND.
func (e *Engine) Release(ctx context.Context, reservationID string) (sku.Result, error) {
	return resultOf(e.runReservation(ctx, reservationID, newCall(core.KindRelease)))
}

// Get returns the durable state of a reservation, or ErrNotFound.
func (e *Engine) Get(ctx context.Context, reservationID string) (sku.View, error) {
	c, err := e.runReservation(ctx, reservationID, newCall(core.KindGet))
	if err != nil {
		return sku.View{}, err
	}
	v, found := c.Result.Reservation, c.Found
	c.free()
	if !found {
		return sku.View{}, ErrNotFound
	}
	return v, nil
}

// Lookup returns the durable answer a request_id got on a SKU: the
// reservation it made, or its recorded rejection; ErrNotFound when nothing
// durable exists (e.g. it was refused at the ingress).
func (e *Engine) Lookup(ctx context.Context, campaignID, skuID, requestID string) (sku.Result, error) {
	c := newCall(core.KindLookup)
	c.RequestID = requestID
	c, err := e.run(ctx, campaignID, skuID, c)
	if err != nil {
		return sku.Result{}, err
	}
	res, found := c.Result, c.Found
	c.free()
	if !found {
		return sku.Result{}, ErrNotFound
	}
	return res, nil
}

// Pause stops admission on a SKU (reserve answers PAUSED); pay and close
// go on. Idempotent; durable when it returns nil.
func (e *Engine) Pause(ctx context.Context, campaignID, skuID string) error {
	return e.simple(ctx, campaignID, skuID, core.KindPause)
}

// Resume restarts admission on a SKU. Idempotent.
func (e *Engine) Resume(ctx context.Context, campaignID, skuID string) error {
	return e.simple(ctx, campaignID, skuID, core.KindResume)
}

func (e *Engine) simple(ctx context.Context, campaignID, skuID string, kind core.Kind) error {
	c, err := e.run(ctx, campaignID, skuID, newCall(kind))
	if err != nil {
		return err
	}
	c.free()
	return nil
}

// Refunds lists the payments of a SKU that arrived after close and must be
// refunded, in log order.
func (e *Engine) Refunds(ctx context.Context, campaignID, skuID string) ([]sku.Refund, error) {
	c, err := e.run(ctx, campaignID, skuID, newReportCall(core.KindRefunds))
	if err != nil {
		return nil, err
	}
	r := c.Report.Refunds
	c.free()
	return r, nil
}

// StateHash returns the canonical hash of a SKU's state (sku.Machine.Hash):
// equal hashes mean equal states, e.g. a restored data dir and its source.
func (e *Engine) StateHash(ctx context.Context, campaignID, skuID string) ([32]byte, error) {
	c, err := e.run(ctx, campaignID, skuID, newReportCall(core.KindHash))
	if err != nil {
		return [32]byte{}, err
	}
	h := c.Report.Hash
	c.free()
	return h, nil
}
