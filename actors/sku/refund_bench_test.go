package sku

import (
	"strconv"
	"testing"

	"github.com/seckill/seckill/internal/benchsize"
)

// BenchmarkPayNewPaymentIDOnManyRefunds is one pay of a payment_id not
// seen before on a PAID reservation that already has n refunds recorded
// (a gateway retrying with a new payment_id each time): the lookup of the
// payment_id among the reservation's refunds, the REFUND_REQUIRED record
// and the answer. The SKU's actor does it for every such pay, and every
// buyer of the SKU waits behind it, so its cost must not grow with n.
// The reservation goes back to exactly n refunds (a decoded snapshot)
// every n/10 pays, so n stays within 10% of its name whatever b.N is.
func BenchmarkPayNewPaymentIDOnManyRefunds(b *testing.B) {
	for _, n := range []int{benchsize.Pick(1_000, 10), benchsize.Pick(100_000, 100)} {
		// Built once: b.Run calls the function again for each b.N it tries.
		snapshot := manyRefundsState(b, n)
		b.Run("refunds="+strconv.Itoa(n), func(b *testing.B) { benchmarkPayNewPaymentID(b, snapshot, n) })
	}
}

// manyRefundsState returns the encoded state of a SKU whose one
// reservation, seq 1, is PAID and has n refunds recorded, all of amount
// 100.
func manyRefundsState(b *testing.B, n int) []byte {
	m := New()
	d := Definition{CampaignID: "bench", SKUID: "hot", StartAt: 0, EndAt: 1 << 50,
		PaymentWindowMs: 3_600_000, SaleLimit: 1, ReleaseOnClose: true}
	if _, _, err := m.Define(1, d, nil); err != nil {
		b.Fatal(err)
	}
	if res, _ := m.Reserve(2, "r1", "u1", nil); res.Outcome != OutcomeAccepted {
		b.Fatal(res.Outcome)
	}
	if res, _ := m.Pay(3, 1, "paid", 100, nil); res.Outcome != OutcomePaid {
		b.Fatal(res.Outcome)
	}
	out := make([]Record, 0, 1)
	for i := range n {
		if res, _ := m.Pay(4, 1, "old-"+strconv.Itoa(i), 100, out[:0]); res.Outcome != OutcomePaymentConflict {
			b.Fatalf("refund %d: %s", i, res.Outcome)
		}
	}
	return encodeFrozen(b, m.Freeze())
}

func benchmarkPayNewPaymentID(b *testing.B, snapshot []byte, n int) {
	m, err := DecodeState(snapshot)
	if err != nil {
		b.Fatal(err)
	}
	out := make([]Record, 0, 1)
	// The ids paid between two restores: none is recorded in the snapshot.
	period := max(n/10, 1)
	ids := make([]string, period)
	for i := range ids {
		ids[i] = "new-" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if i > 0 && i%period == 0 {
			b.StopTimer()
			if m, err = DecodeState(snapshot); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		res, _ := m.Pay(5, 1, ids[i%period], 100, out[:0])
		if res.Outcome != OutcomePaymentConflict || len(res.Reservation.RefundPayments) != n+i%period+1 {
			b.Fatalf("pay %d: %s with %d refunds, want PAYMENT_CONFLICT with %d", i, res.Outcome, len(res.Reservation.RefundPayments), n+i%period+1)
		}
	}
}
