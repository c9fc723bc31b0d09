package httpapi_test

import (
	"net/http"
	"testing"
)

// TestPaymentIDRepeatedWithAnotherAmount: a payment repeated with its
// payment_id and another amount is 422 PAYMENT_ID_REUSED, and the
// reservation keeps the payment as first recorded (amount null is 0).
func TestPaymentIDRepeatedWithAnotherAmount(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	ts.define(campaign("pid", "15m", map[string]int{"s": 5}))
	r := ts.reserve("pid", "s", "r1", "u1")
	want(t, r, http.StatusAccepted, "")
	id := r.str("reservation_id")
	pay := "/v1/reservations/" + id + "/payment"
	want(t, ts.post(pay, `{"payment_id":"p1","amount":null}`), http.StatusOK, "")
	got := ts.post(pay, `{"payment_id":"p1","amount":9223372036854775807}`)
	want(t, got, http.StatusUnprocessableEntity, "PAYMENT_ID_REUSED")
	if got.str("detail") == "" {
		t.Fatalf("no detail: %v", got)
	}
	want(t, ts.post(pay, `{"payment_id":"p1"}`), http.StatusOK, "")
}
