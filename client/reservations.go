package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
)

// Reservation reads a reservation's durable state (GET
// /v1/reservations/{id}); an unknown id is ErrNotFound.
func (c *Client) Reservation(ctx context.Context, reservationID string) (*Reservation, error) {
	a, err := c.do(ctx, request{method: http.MethodGet, path: pathReservation(reservationID), base: c.cellOf(reservationID), borrow: true})
	if err != nil {
		return nil, err
	}
	return decodeReservation(a, "reservation")
}

// Payment is the body of a payment callback.
type Payment struct {
	// PaymentID names the payment: the same id again is the same payment.
	PaymentID string `json:"payment_id"`
	// Amount is in minor units, recorded as given.
	Amount int64 `json:"amount"`
}

// Pay records a payment (the payment system's callback): the reservation,
// now PAID; a payment after the close is ErrRefundRequired, another
// payment_id on a paid reservation ErrPaymentConflict (both recorded for
// refund). The body names the reservation, so a signed one (Options.
// PaymentSecret) cannot be replayed on another. A 504 is resolved by
// reading the reservation: PAID by this payment ends the call, anything
// else sends the same payment again.
func (c *Client) Pay(ctx context.Context, reservationID string, p Payment) (*Reservation, error) {
	body, err := json.Marshal(struct {
		Payment
		ReservationID string `json:"reservation_id"`
	}{p, reservationID})
	if err != nil {
		return nil, err
	}
	return c.command(ctx, request{method: http.MethodPost, path: pathReservation(reservationID) + "/payment", body: body, sign: true},
		reservationID, func(r *Reservation) bool { return r.State == StatePaid && r.PaymentID == p.PaymentID })
}

// Cancel closes an unpaid reservation (its unit goes back on sale): the
// reservation, now CLOSED; a paid one is ErrNotClosable. A repeat answers
// the same.
func (c *Client) Cancel(ctx context.Context, reservationID string) (*Reservation, error) {
	return c.command(ctx, request{method: http.MethodPost, path: pathReservation(reservationID) + "/cancel"},
		reservationID, func(r *Reservation) bool { return r.State == StateClosed })
}

// command sends a pay or cancel; a 504 is resolved by reading the
// reservation, done when took says the command took effect.
func (c *Client) command(ctx context.Context, r request, reservationID string, took func(*Reservation) bool) (*Reservation, error) {
	r.base = c.cellOf(reservationID)
	r.resolveArg, r.borrow = reservationID, true
	r.resolve = func(c *Client, ctx context.Context, _ *Error, reservationID string) (bool, *Reservation, error) {
		if got, err := c.Reservation(ctx, reservationID); err == nil && took(got) {
			return true, got, nil
		}
		return false, nil, nil
	}
	a, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	return decodeReservation(a, r.path)
}

func pathReservation(id string) string { return "/v1/reservations/" + url.PathEscape(id) }
