package sku

import (
	"runtime"
	"strconv"
	"testing"
)

// TestManyRefundsOnOneReservationCostLinear: every distinct payment on a
// closed or paid reservation is recorded for refund, however many the
// payment system sends (a gateway retrying with a new payment_id each
// time, or any caller while callbacks are unsigned). Recording one more
// must cost the same at the thousandth as at the first: each refund used
// to copy the reservation's whole refund list into a new one that the
// table kept for ever (about 15 n² bytes held for n refunds, 1 GB at
// 8,000), and each answer copied it again.
func TestManyRefundsOnOneReservationCostLinear(t *testing.T) {
	m := New()
	def := Definition{CampaignID: "c1", SKUID: "s1", StartAt: 0, EndAt: 1_000_000, PaymentWindowMs: 60_000, SaleLimit: 3, ReleaseOnClose: true}
	if _, _, err := m.Define(0, def, nil); err != nil {
		t.Fatal(err)
	}
	if res, _ := m.Reserve(1, "r1", "u1", nil); res.Outcome != OutcomeAccepted {
		t.Fatal(res.Outcome)
	}
	if res, _ := m.Pay(2, 1, "p", 0, nil); res.Outcome != OutcomePaid {
		t.Fatal(res.Outcome)
	}
	out := make([]Record, 0, 1)
	pay := func(i int) {
		res, _ := m.Pay(3, 1, "x"+strconv.Itoa(i), 1, out[:0])
		if res.Outcome != OutcomePaymentConflict {
			t.Fatalf("refund %d: %s", i, res.Outcome)
		}
	}
	// allocated returns the bytes allocated by pays from..to-1.
	allocated := func(from, to int) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := from; i < to; i++ {
			pay(i)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	const batch = 500
	first := allocated(0, batch)
	for i := batch; i < 4000; i++ {
		pay(i)
	}
	// A frozen state and a view taken now keep the 4,000 refunds they saw,
	// though the arrays are shared with the refunds recorded after.
	f, want := m.Freeze(), m.Hash()
	seen, _ := m.Get(1)
	late := allocated(4000, 4000+batch)
	if got, err := DecodeState(encodeFrozen(t, f)); err != nil || got.Hash() != want {
		t.Fatalf("the frozen state changed under later refunds (%v)", err)
	}
	if len(seen.RefundPayments) != 4000 || seen.RefundPayments[3999] != "x3999" {
		t.Fatalf("a view changed under later refunds: %d payments", len(seen.RefundPayments))
	}
	// Growing the lists (this reservation's refunds and the SKU's, 64
	// bytes an entry in all) may happen within the batch: allow it twice.
	if late > 2*first+2*64*(4000+batch) {
		t.Fatalf("%d refunds after 4,000 allocated %d bytes, the first %d allocated %d: the cost of one grows with the list", batch, late, batch, first)
	}
	v, _ := m.Get(1)
	if len(v.RefundPayments) != 4000+batch || v.RefundPayments[0] != "x0" || v.RefundPayments[4000+batch-1] != "x"+strconv.Itoa(4000+batch-1) {
		t.Fatalf("%d refund payments, first %q", len(v.RefundPayments), v.RefundPayments[0])
	}
	if refunds := m.Refunds(); len(refunds) != 4000+batch {
		t.Fatalf("%d refunds listed", len(refunds))
	}
}
