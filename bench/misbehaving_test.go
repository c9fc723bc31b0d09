package bench

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
)

// misbehavingEngine is the real engine with deliberate faults in its
// answers to reserves, so that a test can check that the load tool notices
// a server that breaks its promises (or rides out one that is only slow to
// answer). httpapi and the actors under it are the real ones; only the
// answers this wrapper changes are false.
type misbehavingEngine struct {
	*actors.Engine
	// oversellEvery > 0 answers every Nth reserve ACCEPTED without asking
	// the engine, with the token of the last reservation the engine made:
	// one unit sold twice, the engine's own state untouched.
	oversellEvery int64
	// unknownEvery > 0 answers every Nth new reservation the engine made
	// with actors.ErrResultUnknown (504 RESULT_UNKNOWN): the reservation is
	// durable, only its answer is lost, and a resend of the request_id
	// gets it.
	unknownEvery int64
	// failEvery > 0 answers every Nth reserve with an error the API does
	// not know (500 INTERNAL) without asking the engine: no answer of the
	// contract, nothing decided.
	failEvery int64

	calls   atomic.Int64 // reserves seen
	creates atomic.Int64 // new reservations the engine made

	mu   sync.Mutex
	last sku.View // the engine's last new reservation
}

// ReserveWith applies the faults above around the real engine's
// ReserveWith.
func (m *misbehavingEngine) ReserveWith(ctx context.Context, campaignID, skuID, requestID, userID string, holder sku.Holder) (sku.Result, error) {
	call := m.calls.Add(1)
	if m.failEvery > 0 && call%m.failEvery == 0 {
		return sku.Result{}, errors.New("misbehaving engine: planted failure")
	}
	if m.oversellEvery > 0 && call%m.oversellEvery == 0 {
		if forged, ok := m.forgeAcceptance(campaignID, skuID, requestID, userID, call); ok {
			return forged, nil
		}
	}
	res, err := m.Engine.ReserveWith(ctx, campaignID, skuID, requestID, userID, holder)
	if err != nil || res.Outcome != sku.OutcomeAccepted || res.Duplicate {
		return res, err
	}
	m.mu.Lock()
	m.last = res.Reservation
	m.mu.Unlock()
	if created := m.creates.Add(1); m.unknownEvery > 0 && created%m.unknownEvery == 0 {
		return sku.Result{}, actors.ErrResultUnknown
	}
	return res, nil
}

// forgeAcceptance copies the last real reservation of the SKU for another
// buyer under a reservation id of its own; false before there is one.
func (m *misbehavingEngine) forgeAcceptance(campaignID, skuID, requestID, userID string, call int64) (sku.Result, bool) {
	m.mu.Lock()
	view := m.last
	m.mu.Unlock()
	if view.ReservationID == "" {
		return sku.Result{}, false
	}
	view.ReservationID = sku.FormatReservationID(campaignID, skuID, uint32(1<<30+call), [16]byte{})
	view.RequestID, view.UserID = requestID, userID
	return sku.Result{Outcome: sku.OutcomeAccepted, Reservation: view}, true
}
