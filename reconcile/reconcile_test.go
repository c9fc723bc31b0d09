package reconcile_test

import (
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/orders"
	"github.com/seckill/seckill/reconcile"
)

var now = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

func kinds(r reconcile.Report) []string {
	var k []string
	for _, d := range r.Differences {
		k = append(k, d.Kind+" "+d.ReservationID)
	}
	return k
}

// Within the lag a reservation whose order is missing or behind is in
// flight, not a difference; past it, it is one. An order ahead of its
// reservation is a difference at once.
func TestLag(t *testing.T) {
	skus := []reconcile.SKU{{SKUID: "s", SaleLimit: 3, Available: 1, Reserved: 1, Confirmed: 1}}
	res := []reconcile.Reservation{
		{ReservationID: "c~s~1~a", RequestID: "r1", UserID: "u1", SKUID: "s", TokenID: 1, State: "PAID", PaymentID: "p", ChangedAt: now.Add(-time.Second)},
		{ReservationID: "c~s~2~b", RequestID: "r2", UserID: "u2", SKUID: "s", TokenID: 2, State: "PENDING_PAYMENT", ChangedAt: now.Add(-time.Second)},
		{ReservationID: "c~s~3~c", RequestID: "r3", UserID: "u3", SKUID: "s", TokenID: 3, State: "PENDING_PAYMENT", ChangedAt: now.Add(-time.Hour)},
	}
	byID := map[string]*orders.Order{
		// behind: PENDING while seckill has it PAID, changed a second ago
		"c~s~1~a": {ReservationID: "c~s~1~a", RequestID: "r1", UserID: "u1", SKUID: "s", TokenID: 1, State: "PENDING_PAYMENT"},
		// ahead: CLOSED while seckill has it PENDING
		"c~s~3~c": {ReservationID: "c~s~3~c", RequestID: "r3", UserID: "u3", SKUID: "s", TokenID: 3, State: "CLOSED"},
	}
	r := reconcile.Compare("c", "", res, skus, byID, 30*time.Second, now)
	if got := kinds(r); len(got) != 1 || got[0] != "STATE_MISMATCH c~s~3~c" || r.InFlight != 2 {
		t.Fatalf("lag 30s: %v, %d in flight", got, r.InFlight)
	}
	r = reconcile.Compare("c", "", res, skus, byID, 0, now)
	want := []string{"STATE_MISMATCH c~s~1~a", "MISSING_ORDER c~s~2~b", "STATE_MISMATCH c~s~3~c"}
	if got := kinds(r); len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || r.InFlight != 0 || r.Clean {
		t.Fatalf("lag 0: %v", got)
	}
}

// A closed reservation with a payment to refund is an order in
// REFUND_REQUIRED with that refund row; a SKU whose counts do not add up
// is named.
func TestRefundsAndTotals(t *testing.T) {
	res := []reconcile.Reservation{{ReservationID: "c~s~1~a", RequestID: "r1", UserID: "u1", SKUID: "s", TokenID: 1, State: "CLOSED",
		Refunds: []string{"late"}, ChangedAt: now.Add(-time.Hour)}}
	order := &orders.Order{ReservationID: "c~s~1~a", RequestID: "r1", UserID: "u1", SKUID: "s", TokenID: 1, State: "REFUND_REQUIRED", Refunds: []string{"late"}}
	skus := []reconcile.SKU{{SKUID: "s", SaleLimit: 2, Available: 2}}
	if r := reconcile.Compare("c", "", res, skus, map[string]*orders.Order{"c~s~1~a": order}, 0, now); !r.Clean {
		t.Fatalf("%v", kinds(r))
	}
	order.State, order.Refunds = "CLOSED", nil
	skus[0].Available = 1
	r := reconcile.Compare("c", "", res, skus, map[string]*orders.Order{"c~s~1~a": order}, 0, now)
	if got := kinds(r); len(got) != 3 || got[0] != "REFUND_NOT_RECORDED c~s~1~a" || got[1] != "STATE_MISMATCH c~s~1~a" || got[2] != "UNBALANCED_SKU " {
		t.Fatalf("%v", got)
	}
}

// A refund row the order database holds for a payment seckill never
// recorded for refund is a difference, whether the payment is the one that
// paid the reservation (refunding it gives the money back for a sale) or
// one seckill does not know: the order service applied a history seckill
// no longer has (a restore its orders were not re-anchored after).
func TestRefundRowSeckillNeverRecorded(t *testing.T) {
	res := []reconcile.Reservation{
		{ReservationID: "c~s~1~a", RequestID: "r1", UserID: "u1", SKUID: "s", TokenID: 1, State: "PAID", PaymentID: "p1", ChangedAt: now.Add(-time.Hour)},
		{ReservationID: "c~s~2~b", RequestID: "r2", UserID: "u2", SKUID: "s", TokenID: 2, State: "CLOSED", Refunds: []string{"late"}, ChangedAt: now.Add(-time.Hour)},
	}
	byID := map[string]*orders.Order{
		"c~s~1~a": {ReservationID: "c~s~1~a", RequestID: "r1", UserID: "u1", SKUID: "s", TokenID: 1, State: "PAID", PaymentID: "p1", Refunds: []string{"p1"}},
		"c~s~2~b": {ReservationID: "c~s~2~b", RequestID: "r2", UserID: "u2", SKUID: "s", TokenID: 2, State: "REFUND_REQUIRED", Refunds: []string{"late", "other"}},
	}
	skus := []reconcile.SKU{{SKUID: "s", SaleLimit: 2, Available: 1, Confirmed: 1}}
	r := reconcile.Compare("c", "", res, skus, byID, 30*time.Second, now)
	want := []string{"REFUND_NOT_IN_SECKILL c~s~1~a", "REFUND_NOT_IN_SECKILL c~s~2~b"}
	if got := kinds(r); len(got) != 2 || got[0] != want[0] || got[1] != want[1] || r.Clean {
		t.Fatalf("got %v, want %v", got, want)
	}
	for _, d := range r.Differences {
		if d.Orders == "" || d.Repair == "" || d.Seckill == "" {
			t.Fatalf("difference without its sides or repair: %+v", d)
		}
	}
}

// Within the lag, an order in a state its reservation never passes
// through (CLOSED for a PAID reservation, PAID for a CLOSED one) is not
// behind: it is a difference at once, as an order ahead is.
func TestDivergedStateIsNotInFlight(t *testing.T) {
	recent := now.Add(-time.Second)
	res := []reconcile.Reservation{
		{ReservationID: "c~s~1~a", RequestID: "r1", UserID: "u1", SKUID: "s", TokenID: 1, State: "PAID", PaymentID: "p", ChangedAt: recent},
		{ReservationID: "c~s~2~b", RequestID: "r2", UserID: "u2", SKUID: "s", TokenID: 2, State: "CLOSED", Refunds: []string{"late"}, ChangedAt: recent},
		{ReservationID: "c~s~3~c", RequestID: "r3", UserID: "u3", SKUID: "s", TokenID: 3, State: "CLOSED", Refunds: []string{"late"}, ChangedAt: recent},
	}
	byID := map[string]*orders.Order{
		"c~s~1~a": {ReservationID: "c~s~1~a", RequestID: "r1", UserID: "u1", SKUID: "s", TokenID: 1, State: "CLOSED"},
		"c~s~2~b": {ReservationID: "c~s~2~b", RequestID: "r2", UserID: "u2", SKUID: "s", TokenID: 2, State: "PAID", PaymentID: "p"},
		// behind: CLOSED, its refund not applied yet
		"c~s~3~c": {ReservationID: "c~s~3~c", RequestID: "r3", UserID: "u3", SKUID: "s", TokenID: 3, State: "CLOSED"},
	}
	skus := []reconcile.SKU{{SKUID: "s", SaleLimit: 3, Available: 2, Confirmed: 1}}
	r := reconcile.Compare("c", "", res, skus, byID, 30*time.Second, now)
	want := []string{"STATE_MISMATCH c~s~1~a", "REFUND_NOT_RECORDED c~s~2~b", "STATE_MISMATCH c~s~2~b"}
	if got := kinds(r); strings.Join(got, ",") != strings.Join(want, ",") || r.InFlight != 1 {
		t.Fatalf("got %v with %d in flight, want %v with 1", got, r.InFlight, want)
	}
}

// An order holds its payment's amount and whether its closed
// reservation's token went back on sale, as its reservation does: an
// amount missing (0 is an amount), another amount, or another token
// release is a FIELD_MISMATCH, each named.
func TestAmountAndTokenRelease(t *testing.T) {
	zero, paid := int64(0), int64(1999)
	res := []reconcile.Reservation{
		{ReservationID: "c~s~1~a", RequestID: "r1", UserID: "u1", SKUID: "s", TokenID: 1, State: "PAID", PaymentID: "p1", Amount: &zero},
		{ReservationID: "c~s~2~b", RequestID: "r2", UserID: "u2", SKUID: "s", TokenID: 2, State: "PAID", PaymentID: "p2", Amount: &paid},
		{ReservationID: "c~s~3~c", RequestID: "r3", UserID: "u3", SKUID: "s", TokenID: 3, State: "CLOSED", TokenReleased: true},
	}
	order := func(i int) *orders.Order {
		r := res[i]
		return &orders.Order{ReservationID: r.ReservationID, RequestID: r.RequestID, UserID: r.UserID, SKUID: "s", TokenID: r.TokenID,
			State: r.State, PaymentID: r.PaymentID, Amount: r.Amount, TokenReleased: r.TokenReleased}
	}
	byID := map[string]*orders.Order{}
	for i := range res {
		byID[res[i].ReservationID] = order(i)
	}
	skus := []reconcile.SKU{{SKUID: "s", SaleLimit: 3, Available: 1, Confirmed: 2}}
	if r := reconcile.Compare("c", "", res, skus, byID, 0, now); !r.Clean {
		t.Fatalf("the same orders: %v", kinds(r))
	}
	other := int64(1000)
	byID["c~s~1~a"].Amount, byID["c~s~2~b"].Amount, byID["c~s~3~c"].TokenReleased = nil, &other, false
	r := reconcile.Compare("c", "", res, skus, byID, 0, now)
	want := []string{"FIELD_MISMATCH c~s~1~a", "FIELD_MISMATCH c~s~2~b", "FIELD_MISMATCH c~s~3~c"}
	if got := kinds(r); len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i, seckill := range []string{"amount 0", "amount 1999", "token_released true"} {
		if d := r.Differences[i]; d.Seckill != seckill {
			t.Errorf("%s: seckill %q, want %q (orders %q)", d.ReservationID, d.Seckill, seckill, d.Orders)
		}
	}
}
