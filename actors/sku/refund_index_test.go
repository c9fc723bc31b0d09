package sku

import (
	"errors"
	"testing"
)

// refundedMachine returns a SKU with reservation 1 PAID by p1 and
// reservation 2 CLOSED, each with refunds recorded: x1 (100) and x2 (200)
// on 1, x1 (300) and x3 (400) on 2, so one payment_id is recorded on two
// reservations with different amounts.
func refundedMachine(t *testing.T) *Machine {
	t.Helper()
	m := New()
	def := Definition{CampaignID: "c1", SKUID: "s1", StartAt: 0, EndAt: 1_000_000, PaymentWindowMs: 60_000, SaleLimit: 3, ReleaseOnClose: true}
	if _, _, err := m.Define(0, def, nil); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"u1", "u2"} {
		if res, _ := m.Reserve(1, "r-"+u, u, nil); res.Outcome != OutcomeAccepted {
			t.Fatal(res.Outcome)
		}
	}
	if res, _ := m.Pay(2, 1, "p1", 50, nil); res.Outcome != OutcomePaid {
		t.Fatal(res.Outcome)
	}
	if res, _ := m.Close(3, 2, ReasonCancelled, nil); res.Outcome != OutcomeClosed {
		t.Fatal(res.Outcome)
	}
	for _, p := range []struct {
		seq    uint32
		id     string
		amount int64
		want   Outcome
	}{{1, "x1", 100, OutcomePaymentConflict}, {2, "x1", 300, OutcomeRefundRequired},
		{1, "x2", 200, OutcomePaymentConflict}, {2, "x3", 400, OutcomeRefundRequired}} {
		if res, log := m.Pay(4, p.seq, p.id, p.amount, nil); res.Outcome != p.want || len(log) != 1 {
			t.Fatalf("pay %s on %d: %s with %d records, want %s with 1", p.id, p.seq, res.Outcome, len(log), p.want)
		}
	}
	return m
}

// TestRefundIndexAfterRestore: a pay decides whether its payment_id is
// already recorded for refund on its reservation, and with what amount,
// from an index a snapshot does not hold. A restored SKU must rebuild it:
// otherwise a repeated payment_id with another amount would be recorded
// as a second refund instead of answered PAYMENT_ID_REUSED, and one with
// the same amount recorded again, the money refunded twice.
func TestRefundIndexAfterRestore(t *testing.T) {
	m, err := DecodeState(encodeFrozen(t, refundedMachine(t).Freeze()))
	if err != nil {
		t.Fatal(err)
	}
	if a := m.Audit(); !a.OK() {
		t.Errorf("restored: %v", a.Violations)
	}
	for _, p := range []struct {
		seq    uint32
		id     string
		amount int64
		want   Outcome
	}{
		{1, "x1", 101, OutcomePaymentIDReused},
		{1, "x1", 300, OutcomePaymentIDReused}, // the amount of x1 on the other reservation
		{2, "x1", 100, OutcomePaymentIDReused},
		{2, "x3", 401, OutcomePaymentIDReused},
		{1, "x1", 100, OutcomePaymentConflict},
		{1, "x2", 200, OutcomePaymentConflict},
		{2, "x1", 300, OutcomeRefundRequired},
		{2, "x3", 400, OutcomeRefundRequired},
	} {
		if res, log := m.Pay(5, p.seq, p.id, p.amount, nil); res.Outcome != p.want || len(log) != 0 {
			t.Errorf("pay %s of %d on %d: %s with %d records, want %s with none", p.id, p.amount, p.seq, res.Outcome, len(log), p.want)
		}
	}
	// A payment_id recorded on neither reservation is still recorded.
	if res, log := m.Pay(5, 1, "x3", 400, nil); res.Outcome != OutcomePaymentConflict || len(log) != 1 {
		t.Fatalf("pay x3 on 1: %s with %d records, want PAYMENT_CONFLICT with 1", res.Outcome, len(log))
	}
	if refunds := m.Refunds(); len(refunds) != 5 {
		t.Fatalf("%d refunds, want 5: %+v", len(refunds), refunds)
	}
	if a := m.Audit(); !a.OK() {
		t.Fatalf("after the pays: %v", a.Violations)
	}
}

// TestDecodeRefusesARefundListTheRowsDoNotHold: the refund list, which
// the refund index is built from, must list each row's refund payments,
// with their amounts, in log order, and nothing else: Encode never writes
// another list, and an index that disagreed with the rows would answer a
// repeated payment_id otherwise than before the snapshot.
func TestDecodeRefusesARefundListTheRowsDoNotHold(t *testing.T) {
	for name, change := range map[string]func(rs []Refund){
		"amount":       func(rs []Refund) { rs[1].Amount++ },
		"listed twice": func(rs []Refund) { rs[2] = rs[0] },
		"reservation":  func(rs []Refund) { rs[0].ReservationSeq = 2 }, // x1 twice on 2
		"log order":    func(rs []Refund) { rs[0], rs[2] = rs[2], rs[0] },
		"not held":     func(rs []Refund) { rs[3].PaymentID = "x4" },
	} {
		f := refundedMachine(t).Freeze()
		f.refunds = append([]Refund(nil), f.refunds...)
		change(f.refunds)
		if _, err := DecodeState(encodeFrozen(t, f)); !errors.Is(err, ErrBadState) {
			t.Errorf("%s: decoded (%v), want ErrBadState", name, err)
		}
	}
}

// TestDecodeRefusesARefundNoPaymentCouldHaveMade: a refund is recorded
// only for a payment that cannot pay its reservation (applyRefund): one on
// a reservation closed or expired, or another payment_id on a PAID one.
// A state with a refund on a PENDING_PAYMENT reservation, or of the very
// payment that paid its reservation, is one no log builds: decoding it
// must fail, as applying such a record does.
func TestDecodeRefusesARefundNoPaymentCouldHaveMade(t *testing.T) {
	for name, tc := range map[string]struct {
		seq     uint32
		state   State
		payment string
	}{
		"of the accepted payment":  {1, StatePaid, "p1"},
		"on a pending reservation": {3, StatePendingPayment, "late"},
	} {
		m := refundedMachine(t)
		if res, _ := m.Reserve(5, "r-u3", "u3", nil); res.Outcome != OutcomeAccepted {
			t.Fatalf("reserve u3: %s", res.Outcome)
		}
		if got := m.table.get(tc.seq).state; got != tc.state {
			t.Fatalf("%s: reservation %d is %s, want %s", name, tc.seq, got, tc.state)
		}
		// What applyRefund does, without its checks.
		r := m.table.mut(tc.seq)
		x := m.table.editExtra(r)
		x.refundPayments = append(x.refundPayments, tc.payment)
		x.refundAmounts = append(x.refundAmounts, 50)
		r.flags |= flagRefund
		m.addRefund(Refund{ReservationSeq: tc.seq, PaymentID: tc.payment, Amount: 50, At: 5})
		if _, err := DecodeState(encodeFrozen(t, m.Freeze())); !errors.Is(err, ErrBadState) {
			t.Errorf("%s: decoded (%v), want ErrBadState", name, err)
		}
	}
}
