package sim

import (
	"fmt"
	"slices"

	"github.com/seckill/seckill/actors/sku"
)

// The checks compare the engine's Machine with the model. Each returns the
// first disagreement, naming what differs.

var modelStates = [...]sku.State{mPending: sku.StatePendingPayment, mPaid: sku.StatePaid, mClosed: sku.StateClosed}

// checkView compares the engine's view of reservation seq with the model's.
func checkView(m *model, seq uint32, v sku.View) error {
	r := m.get(seq)
	if r == nil {
		return fmt.Errorf("reservation %d: the engine has it, the model does not", seq)
	}
	if _, _, got, _, err := sku.ParseReservationID(v.ReservationID); err != nil || got != seq {
		return fmt.Errorf("reservation %d: the engine shows id %q", seq, v.ReservationID)
	}
	want := modelStates[r.state]
	reason := sku.ReasonNone
	if r.state == mClosed {
		reason = sku.ReasonCancelled
		if r.expired {
			reason = sku.ReasonExpired
		}
	}
	switch {
	case v.RequestID != r.request || v.UserID != r.user:
		return fmt.Errorf("reservation %d: request/user %s/%s, model %s/%s", seq, v.RequestID, v.UserID, r.request, r.user)
	case v.TokenID != r.token:
		return fmt.Errorf("reservation %d: token %d, model %d", seq, v.TokenID, r.token)
	case v.State != want || v.CloseReason != reason:
		return fmt.Errorf("reservation %d: %s %s, model %s %s", seq, v.State, v.CloseReason, want, reason)
	case v.ExpireAt != r.expireAt:
		return fmt.Errorf("reservation %d: expire_at %d, model %d", seq, v.ExpireAt, r.expireAt)
	case v.HoldsToken != r.holds:
		return fmt.Errorf("reservation %d: holds token %v, model %v", seq, v.HoldsToken, r.holds)
	case v.PaymentID != r.payment:
		return fmt.Errorf("reservation %d: payment %q, model %q", seq, v.PaymentID, r.payment)
	case !slices.Equal(v.RefundPayments, r.refunds) && len(v.RefundPayments)+len(r.refunds) > 0:
		return fmt.Errorf("reservation %d: refunds %v, model %v", seq, v.RefundPayments, r.refunds)
	case v.RefundRequired != (len(r.refunds) > 0):
		return fmt.Errorf("reservation %d: refund required %v, model %d refunds", seq, v.RefundRequired, len(r.refunds))
	}
	return nil
}

// checkReply compares a decided reply with the model's prediction.
func checkReply(m *model, want modelReply, got sku.Result) error {
	if got.Outcome != want.outcome || got.Duplicate != want.duplicate {
		return fmt.Errorf("answered %s (duplicate %v), model %s (duplicate %v)", got.Outcome, got.Duplicate, want.outcome, want.duplicate)
	}
	if want.seq == 0 {
		if got.Reservation.ReservationID != "" {
			return fmt.Errorf("answered %s with reservation %s, model none", got.Outcome, got.Reservation.ReservationID)
		}
		return nil
	}
	return checkView(m, want.seq, got.Reservation)
}

// checkMachine compares the whole state and checks the invariants on the
// engine's state alone: sale_limit = available + reserved + confirmed, no
// token held twice, one live purchase per user, one result per request_id
// (Lookup against the model), and the engine's own Audit.
func checkMachine(m *model, e *sku.Machine) error {
	if e.Defined() != m.defined {
		return fmt.Errorf("defined %v, model %v", e.Defined(), m.defined)
	}
	if !m.defined {
		return nil
	}
	d, md := e.Definition(), m.def
	d.IDKey, md.IDKey = [16]byte{}, [16]byte{}
	d.Lottery = nil // checkLottery compares it
	if d != md {
		return fmt.Errorf("definition %+v, model %+v", d, md)
	}
	if err := checkLottery(m, e); err != nil {
		return err
	}
	if e.Paused() != m.paused {
		return fmt.Errorf("paused %v, model %v", e.Paused(), m.paused)
	}
	c := e.Counts()
	if uint64(c.Available)+uint64(c.Reserved)+uint64(c.Confirmed) != uint64(c.SaleLimit) {
		return fmt.Errorf("sale_limit %d != available %d + reserved %d + confirmed %d", c.SaleLimit, c.Available, c.Reserved, c.Confirmed)
	}
	if int(c.Reservations) != len(m.res) {
		return fmt.Errorf("%d reservations, model %d", c.Reservations, len(m.res))
	}
	var held, confirmed, soldOut int
	tokens := make(map[uint32]uint32)
	liveUsers := make(map[string]uint32)
	for seq := uint32(1); int(seq) <= len(m.res); seq++ {
		v, ok := e.Get(seq)
		if !ok {
			return fmt.Errorf("reservation %d: the model has it, the engine does not", seq)
		}
		if err := checkView(m, seq, v); err != nil {
			return err
		}
		if v.HoldsToken {
			if other, twice := tokens[v.TokenID]; twice {
				return fmt.Errorf("token %d held twice: reservations %d and %d", v.TokenID, other, seq)
			}
			tokens[v.TokenID] = seq
			if v.TokenID == 0 || v.TokenID > c.SaleLimit {
				return fmt.Errorf("reservation %d holds token %d, outside 1..%d", seq, v.TokenID, c.SaleLimit)
			}
			if v.State == sku.StatePaid {
				confirmed++
			} else {
				held++
			}
		}
		if v.State != sku.StateClosed {
			if other, twice := liveUsers[v.UserID]; twice {
				return fmt.Errorf("user %s has two live purchases: %d and %d", v.UserID, other, seq)
			}
			liveUsers[v.UserID] = seq
		}
	}
	if int(c.Confirmed) != confirmed || int(c.Reserved) != held {
		return fmt.Errorf("confirmed %d reserved %d, recount %d %d", c.Confirmed, c.Reserved, confirmed, held)
	}
	for request, q := range m.requests {
		res, ok := e.Lookup(request)
		switch {
		case !ok:
			return fmt.Errorf("request_id %s: the engine has no result, model %+v", request, q)
		case q.soldOut && res.Outcome != sku.OutcomeSoldOut:
			return fmt.Errorf("request_id %s: %s, model SOLD_OUT", request, res.Outcome)
		case !q.soldOut && res.Outcome != sku.OutcomeAccepted:
			return fmt.Errorf("request_id %s: %s, model ACCEPTED", request, res.Outcome)
		case !q.soldOut && res.Reservation.RequestID != request:
			return fmt.Errorf("request_id %s: reservation %s", request, res.Reservation.ReservationID)
		}
		if q.soldOut {
			soldOut++
		}
	}
	if int(c.Rejected) != soldOut || int(c.RefundsRequired) != m.refunds {
		return fmt.Errorf("%d rejections %d refunds, model %d %d", c.Rejected, c.RefundsRequired, soldOut, m.refunds)
	}
	if a := e.Audit(); !a.OK() {
		return fmt.Errorf("audit: %v", a.Violations)
	}
	// The live service audits a frozen copy off the actor: it must find
	// the same state healthy, with the same counts.
	if a := e.Freeze().Audit(); !a.OK() || a.Counts != c {
		return fmt.Errorf("audit of the frozen copy: %v, counts %+v, live %+v", a.Violations, a.Counts, c)
	}
	return nil
}
