package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seckill/seckill/orders"
	"github.com/seckill/seckill/orders/orderstest"
	"github.com/seckill/seckill/reconcile"
)

// reconcileRun runs seckillctl reconcile with args and returns its exit
// status and its report (--json).
func reconcileRun(t *testing.T, args ...string) (int, reconcile.Report, string) {
	t.Helper()
	var out, errb bytes.Buffer
	status := run(append([]string{"reconcile", "--json"}, args...), &out, &errb)
	var r reconcile.Report
	if status != exitUsage {
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatalf("reconcile %v: exit %d, output %q: %v; stderr %s", args, status, out.String(), err, errb.String())
		}
	}
	return status, r, errb.String()
}

// only checks that every difference of r names reservation id, and that
// their kinds are kinds.
func only(t *testing.T, r reconcile.Report, id string, kinds ...string) {
	t.Helper()
	var got []string
	for _, d := range r.Differences {
		if d.ReservationID != id {
			t.Fatalf("a difference of another reservation than %s: %+v", id, d)
		}
		got = append(got, d.Kind)
	}
	if strings.Join(got, ",") != strings.Join(kinds, ",") {
		t.Fatalf("differences of %s: %v, want %v (%+v)", id, got, kinds, r.Differences)
	}
}

// A campaign's orders reconciled against seckilld, online and from its
// data dir: clean after the consumer caught up; a row deleted, edited,
// added or a refund row lost is named, exactly, by reservation id, with
// its repair; the repair (seckill-orders redeliver) makes it clean again.
func TestReconcile(t *testing.T) {
	c, dataDir := orderstest.SeckillIn(t)
	db := orderstest.Database(t)
	orderstest.Define(t, c, "rc", 30)
	_, stop := orderstest.Consume(t, db, &orders.FeedSource{Client: c, CampaignID: "rc", Limit: 50, Wait: time.Second})
	orderstest.Sale(t, c, "rc", 0, 80)
	orderstest.WaitClean(t, c, db, "rc")
	stop() // nothing moves from here on: the rows are the test's

	online := []string{"--orders", db, "--campaign", "rc", "--server", c.BaseURL(), "--admin-token", orderstest.Token, "--lag", "0s"}
	offline := []string{"--orders", db, "--campaign", "rc", "--data-dir", dataDir, "--lag", "0s"}
	for _, args := range [][]string{online, offline} {
		status, r, stderr := reconcileRun(t, args...)
		if status != exitOK || !r.Clean || r.Compared == 0 || len(r.Totals) != 2 || !r.Totals[0].Balanced {
			t.Fatalf("%v: exit %d, %+v; %s", args, status, r, stderr)
		}
	}

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	pick := func(where string) string {
		var id string
		if err := conn.QueryRow(ctx, `SELECT reservation_id FROM orders WHERE `+where+` ORDER BY reservation_id LIMIT 1`).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	exec := func(sql string, args ...any) {
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	pool, err := pgxpool.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	repair := func(id string) {
		t.Helper()
		if _, err := orders.NewStore(pool).Redeliver(ctx, c, []string{id}); err != nil {
			t.Fatal(err)
		}
		if status, r, _ := reconcileRun(t, online...); status != exitOK {
			t.Fatalf("after redelivering %s: exit %d, %+v", id, status, r.Differences)
		}
	}

	paid := pick(`state = 'PAID'`)
	exec(`DELETE FROM orders WHERE reservation_id = $1`, paid)
	for _, args := range [][]string{online, offline} {
		status, r, _ := reconcileRun(t, args...)
		if status != exitFailed {
			t.Fatalf("a deleted row: exit %d", status)
		}
		only(t, r, paid, reconcile.MissingOrder, reconcile.TokenNotInOrders)
		if !strings.Contains(r.Differences[0].Repair, "seckill-orders redeliver --reservation "+paid) {
			t.Fatalf("repair %q", r.Differences[0].Repair)
		}
	}
	repair(paid)

	exec(`UPDATE orders SET state = 'PENDING_PAYMENT' WHERE reservation_id = $1`, paid)
	_, r, _ := reconcileRun(t, online...)
	only(t, r, paid, reconcile.StateMismatch)
	repair(paid)

	pending := pick(`state = 'PENDING_PAYMENT'`)
	exec(`UPDATE orders SET token_id = token_id + 1000 WHERE reservation_id = $1`, pending)
	_, r, _ = reconcileRun(t, online...)
	only(t, r, pending, reconcile.FieldMismatch)
	repair(pending)

	refunded := pick(`state = 'REFUND_REQUIRED'`)
	exec(`DELETE FROM order_refunds WHERE reservation_id = $1`, refunded)
	_, r, _ = reconcileRun(t, online...)
	only(t, r, refunded, reconcile.RefundNotRecorded)
	repair(refunded)

	exec(`INSERT INTO orders (reservation_id, campaign_id, sku_id, request_id, user_id, token_id, state, created_at, expire_at, last_event_id)
VALUES ('rc~blue~999~0000000000000000', 'rc', 'blue', 'ghost', 'ghost', 1, 'PAID', now(), now(), 'none')`)
	status, r, _ := reconcileRun(t, online...)
	if status != exitFailed {
		t.Fatalf("an orphan order: exit %d", status)
	}
	only(t, r, "rc~blue~999~0000000000000000", reconcile.OrphanOrder)

	// The text form names it too, with its repair.
	var out, errb bytes.Buffer
	if status := run(append([]string{"reconcile"}, online...), &out, &errb); status != exitFailed ||
		!strings.Contains(out.String(), "ORPHAN_ORDER reservation rc~blue~999~0000000000000000 request ghost sku blue") ||
		!strings.Contains(out.String(), "1 difference(s)") {
		t.Fatalf("text: exit %d\n%s%s", status, out.String(), errb.String())
	}

	// Usage and I/O: exit 2.
	for _, args := range [][]string{
		{"--campaign", "rc", "--server", c.BaseURL()},
		{"--orders", db, "--campaign", "rc", "--server", c.BaseURL(), "--data-dir", dataDir, "--admin-token", "x"},
		{"--orders", "postgres://nobody@127.0.0.1:1/none?connect_timeout=2", "--campaign", "rc", "--data-dir", dataDir},
		{"--orders", db, "--campaign", "rc", "--server", c.BaseURL(), "--admin-token", "wrong"},
	} {
		if status, _, _ := reconcileRun(t, args...); status != exitUsage {
			t.Fatalf("%v: exit %d, want 2", args, status)
		}
	}
}
