package orders_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/orders/orderstest"
)

// A consumer that takes a SKU from the export takes its refunds from the
// refund list (an export row says only refund_required), and ends with the
// refund rows a consumer that followed the events holds: one per payment
// to refund, by reservation and payment id, with its amount and time.
// Payments after the close (two on one reservation) and second payments
// on paid reservations land before a consumer stops, while it is stopped,
// in the rounds that truncate the logs past its cursor, and while it and a
// new consumer resynchronise (refunds whose events follow the export's
// index arrive again from the feed); all three reconcile clean.
func TestResyncedRefundsAreTheEventsRefunds(t *testing.T) {
	s := newResyncScene(t, "refunds", true)
	c, ctx, src := s.c, context.Background(), s.src
	followed, returned, fresh, follower, stop := s.followed, s.returned, s.fresh, s.follower, s.stopReturned
	reserve := func(from, to int) []string { return s.reserve(t, from, to) }
	pay := func(id, paymentID string, amount int64, want error) error {
		_, err := c.Pay(ctx, id, client.Payment{PaymentID: paymentID, Amount: amount})
		if want != nil && errors.Is(err, want) {
			return nil
		}
		return err
	}
	// refund makes buyer i's payments to refund: a second payment on a
	// paid reservation (even i), or one payment after the close (odd i),
	// two when i%4 == 3; each payment an amount of its own.
	refund := func(i int, id string) error {
		if i%2 == 0 {
			return pay(id, fmt.Sprint("again", i), int64(300+i), client.ErrPaymentConflict)
		}
		err := pay(id, fmt.Sprint("late", i), int64(500+i), client.ErrRefundRequired)
		if err == nil && i%4 == 3 {
			err = pay(id, fmt.Sprint("later", i), int64(700+i), client.ErrRefundRequired)
		}
		return err
	}
	// act pays, cancels or leaves buyer i's reservation pending (before
	// the refunds of it).
	act := func(i int, id string) error {
		var err error
		switch i % 4 {
		case 0, 2:
			err = pay(id, fmt.Sprint("p", i), int64(100+i), nil)
		case 1, 3:
			_, err = c.Cancel(ctx, id)
		}
		if err != nil {
			return fmt.Errorf("buyer %d (%s): %w", i, id, err)
		}
		return nil
	}
	// refunded: buyers with i%3 == 0 get refunds, the others none.
	both := func(i int, id string) error {
		if err := act(i, id); err != nil {
			return err
		}
		if i%3 != 0 {
			return nil
		}
		if err := refund(i, id); err != nil {
			return fmt.Errorf("buyer %d (%s): refund: %w", i, id, err)
		}
		return nil
	}
	all := func(from int, ids []string, f func(int, string) error) {
		t.Helper()
		for j, id := range ids {
			if err := f(from+j, id); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Orders paid and closed, some refunds among them, seen by both
	// consumers; then the returning consumer stops, and more refunds of
	// those orders and of new ones come without it.
	held := reserve(0, 48)
	all(0, held[:24], both)
	orderstest.WaitClean(t, c, followed, "refunds")
	orderstest.WaitClean(t, c, returned, "refunds")
	stop()
	all(24, held[24:], both)
	for j, id := range held[:24] {
		if i := j; i%3 != 0 { // refunds of orders it holds with none
			if err := refund(i, id); err != nil {
				t.Fatalf("buyer %d (%s): refund: %v", i, id, err)
			}
		}
	}

	// The sale, in rounds the follower catches up with, until the SKUs'
	// logs are truncated past the returning consumer's cursor.
	cursor := savedCursor(t, returned, src(0).Name())
	next := len(held)
	for deadline := time.Now().Add(2 * time.Minute); !truncatedPast(t, c, "refunds", cursor); next += 12 {
		if time.Now().After(deadline) {
			t.Fatal("the SKUs' logs were not truncated past the cursor within 2 minutes")
		}
		all(next, reserve(next, next+12), both)
		orderstest.WaitClean(t, c, followed, "refunds")
	}

	// Reservations paid and closed before the two consumers start,
	// refunded while they take the SKUs from the export.
	pending := reserve(next, next+48)
	all(next, pending, act)
	orderstest.WaitClean(t, c, followed, "refunds")
	var wg sync.WaitGroup
	failed := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for j, id := range pending {
			if err := refund(next+j, id); err != nil {
				failed <- fmt.Errorf("buyer %d (%s): refund: %w", next+j, id, err)
				return
			}
		}
	}()
	back, _ := orderstest.Consume(t, returned, src(50))
	first, _ := orderstest.Consume(t, fresh, src(50))
	wg.Wait()
	select {
	case err := <-failed:
		t.Fatal(err)
	default:
	}

	orderstest.WaitClean(t, c, followed, "refunds")
	wantOrders, wantRefunds := orderRows(t, followed), refundRows(t, followed)
	// The rows compared hold what they are meant to compare.
	for _, q := range []string{
		`SELECT count(*) FROM orders WHERE state = 'REFUND_REQUIRED'`,
		`SELECT count(*) FROM order_refunds JOIN orders USING (reservation_id) WHERE state = 'PAID'`,
		`SELECT count(*) FROM (SELECT reservation_id FROM order_refunds GROUP BY reservation_id HAVING count(*) = 2) AS two`,
	} {
		if count(t, followed, q) == 0 {
			t.Errorf("the follower: none: %s", q)
		}
	}
	for _, db := range []struct {
		name, url string
		consumer  *prometheus.Registry
	}{{"returned", returned, back}, {"fresh", fresh, first}} {
		orderstest.WaitClean(t, c, db.url, "refunds")
		if n := value(t, db.consumer, "seckill_orders_resyncs_total"); n != float64(len(orderstest.SKUs)) {
			t.Fatalf("the %s consumer resynchronised %v times, want once per SKU", db.name, n)
		}
		sameRows(t, db.name+" consumer's orders", wantOrders, orderRows(t, db.url))
		sameRows(t, db.name+" consumer's refunds", wantRefunds, refundRows(t, db.url))
	}
	if n := value(t, follower, "seckill_orders_resyncs_total"); n != 0 {
		t.Fatalf("the follower resynchronised %v times: its rows are not the events' alone", n)
	}
}

// sameRows fails t unless got holds want's rows (the events').
func sameRows(t *testing.T, what string, want, got []string) {
	t.Helper()
	if slices.Equal(want, got) {
		return
	}
	var diffs []string
	for i := range max(len(want), len(got)) {
		if w, g := at(want, i), at(got, i); w != g {
			diffs = append(diffs, "events: "+w+"\nexport: "+g)
		}
	}
	t.Fatalf("the %s: %d rows differ of %d (events) and %d (export), first:\n%s", what, len(diffs), len(want), len(got),
		strings.Join(diffs[:min(len(diffs), 3)], "\n"))
}

// refundRows reads every refund row but the payment team's refunded_at,
// one line each, by reservation and payment id.
func refundRows(t *testing.T, dbURL string) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT reservation_id, payment_id, amount, required_at FROM order_refunds ORDER BY reservation_id, payment_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		values, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%v", values))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
