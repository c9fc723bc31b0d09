package feed

import (
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/timefmt"
)

// Reservation is a reservation's durable state as seckill shows it, one
// rendering everywhere: GET /v1/reservations/{id}, the rows of the
// reservations export a feed consumer resynchronises from (the state the
// SKU's events build), and seckillctl export (which adds the fields a
// reconciliation needs). Times in timefmt's format.
type Reservation struct {
	ReservationID  string `json:"reservation_id"`
	RequestID      string `json:"request_id"`
	UserID         string `json:"user_id"`
	State          string `json:"state"`
	TokenID        uint32 `json:"token_id"`
	CreatedAt      string `json:"created_at"`
	ExpireAt       string `json:"expire_at"`
	PaidAt         string `json:"paid_at,omitempty"`
	PaymentID      string `json:"payment_id,omitempty"`
	ClosedAt       string `json:"closed_at,omitempty"`
	ClosedReason   string `json:"closed_reason,omitempty"`
	RefundRequired bool   `json:"refund_required,omitempty"`
}

// NewReservation renders a reservation's view.
func NewReservation(v sku.View) Reservation {
	return Reservation{
		ReservationID:  v.ReservationID,
		RequestID:      v.RequestID,
		UserID:         v.UserID,
		State:          v.State.String(),
		TokenID:        v.TokenID,
		CreatedAt:      timefmt.Millis(v.CreatedAt),
		ExpireAt:       timefmt.Millis(v.ExpireAt),
		PaidAt:         timefmt.OptionalMillis(v.PaidAt),
		PaymentID:      v.PaymentID,
		ClosedAt:       timefmt.OptionalMillis(v.ClosedAt),
		ClosedReason:   v.CloseReason.String(),
		RefundRequired: v.RefundRequired,
	}
}
