package sku

import "testing"

// TestPaymentIDReusedWithAnotherAmount: a payment_id is a payment's
// idempotency key. Its repeat with the same amount is answered again
// (ALREADY_PAID, PAYMENT_CONFLICT, REFUND_REQUIRED) and records nothing;
// with another amount it is PAYMENT_ID_REUSED and records nothing, so the
// first amount stays the one recorded: on the paid reservation, and on a
// payment recorded for refund.
func TestPaymentIDReusedWithAnotherAmount(t *testing.T) {
	m := New()
	def := Definition{CampaignID: "c1", SKUID: "s1", StartAt: 0, EndAt: 1_000_000, PaymentWindowMs: 60_000, SaleLimit: 3, ReleaseOnClose: true}
	var log []Record
	var err error
	if _, log, err = m.Define(0, def, log); err != nil {
		t.Fatal(err)
	}
	var res Result
	res, log = m.Reserve(1, "r1", "u1", log)
	if res.Outcome != OutcomeAccepted {
		t.Fatal(res.Outcome)
	}
	pay := func(paymentID string, amount int64, want Outcome, records int) {
		t.Helper()
		before := len(log)
		res, log = m.Pay(2, 1, paymentID, amount, log)
		if res.Outcome != want || len(log)-before != records {
			t.Fatalf("pay %s amount %d: %s with %d records, want %s with %d", paymentID, amount, res.Outcome, len(log)-before, want, records)
		}
	}
	pay("p1", 0, OutcomePaid, 1) // an amount not given is 0
	pay("p1", 9223372036854775807, OutcomePaymentIDReused, 0)
	pay("p1", 0, OutcomeAlreadyPaid, 0)
	pay("p2", 500, OutcomePaymentConflict, 1) // recorded for refund
	pay("p2", 501, OutcomePaymentIDReused, 0)
	pay("p2", 500, OutcomePaymentConflict, 0)
	if v, _ := m.Get(1); v.Amount != 0 || v.PaymentID != "p1" {
		t.Fatalf("the paid reservation: payment %s amount %d, want p1 amount 0", v.PaymentID, v.Amount)
	}
	refunds := m.Refunds()
	if len(refunds) != 1 || refunds[0].PaymentID != "p2" || refunds[0].Amount != 500 {
		t.Fatalf("refunds %+v, want p2 for 500", refunds)
	}
	if got := OutcomePaymentIDReused.String(); got != "PAYMENT_ID_REUSED" {
		t.Fatalf("name %q", got)
	}
}
