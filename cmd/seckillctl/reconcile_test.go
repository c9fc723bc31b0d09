package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/testbin"
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

// ordersBinary builds seckill-orders once for the package's tests
// (testbin) and returns its path.
func ordersBinary(t *testing.T) string {
	t.Helper()
	return testbin.Build(t, "github.com/seckill/seckill/cmd/seckill-orders")
}

// runRepair runs the seckill-orders command that d's repair prints, as
// an operator would paste it, with env (SECKILL_ORDERS_DATABASE, ...).
func runRepair(t *testing.T, bin string, d reconcile.Difference, env ...string) {
	t.Helper()
	_, line, ok := strings.Cut(d.Repair, "seckill-orders ")
	if !ok {
		t.Fatalf("repair %q runs no seckill-orders command", d.Repair)
	}
	line, _, _ = strings.Cut(line, " (")
	cmd := exec.Command(bin, strings.Fields(line)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("seckill-orders %s: %v\n%s", line, err, out)
	}
	t.Logf("seckill-orders %s:\n%s", line, out)
}

// A campaign's orders reconciled against seckilld, online and from its
// data dir: clean after the consumer caught up; a row deleted, edited,
// added or a refund row lost is named, exactly, by reservation id, and
// online with the ids of its reservation's events; the printed repair
// (seckill-orders redeliver --source S --event IDS), run, makes it clean
// again.
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
	bin := ordersBinary(t)
	env := []string{"SECKILL_ORDERS_DATABASE=" + db, "SECKILL_ORDERS_FEED=" + c.BaseURL(), "SECKILL_ORDERS_ADMIN_TOKEN=" + orderstest.Token}
	// repair runs the first difference's printed repair, which names the
	// reservation's events by id (created first), and reconciles again.
	repair := func(r reconcile.Report, id string, types ...string) {
		t.Helper()
		d := r.Differences[0]
		if d.Source == "" || len(d.Events) != len(types) || !strings.Contains(d.Repair, "seckill-orders redeliver --source "+d.Source+" --event "+strings.Join(d.Events, ",")) {
			t.Fatalf("difference %+v: want a repair by the ids of its %d events", d, len(types))
		}
		var got []string
		if err := conn.QueryRow(ctx, `SELECT array_agg(type ORDER BY seckill_index) FROM order_events WHERE source = $1 AND id = ANY($2)`,
			d.Source, d.Events).Scan(&got); err != nil || strings.Join(got, ",") != strings.Join(types, ",") {
			t.Fatalf("the events the repair names are %v (%v), want %v", got, err, types)
		}
		runRepair(t, bin, d, env...)
		if status, r, _ := reconcileRun(t, online...); status != exitOK {
			t.Fatalf("after the repair of %s: exit %d, %+v", id, status, r.Differences)
		}
	}
	created, paidType, closed, refundRequired := client.TypeReservationCreated, client.TypeReservationPaid, client.TypeReservationClosed, client.TypeRefundRequired

	paid := pick(`state = 'PAID' AND reservation_id NOT IN (SELECT reservation_id FROM order_refunds)`)
	exec(`DELETE FROM orders WHERE reservation_id = $1`, paid)
	var r reconcile.Report
	for _, args := range [][]string{online, offline} {
		var status int
		status, r, _ = reconcileRun(t, args...)
		if status != exitFailed {
			t.Fatalf("a deleted row: exit %d", status)
		}
		only(t, r, paid, reconcile.MissingOrder, reconcile.TokenNotInOrders)
	}
	// Offline, the log's events have no feed to be read from: the repair
	// is by reservation id.
	if !strings.Contains(r.Differences[0].Repair, "seckill-orders redeliver --reservation "+paid) {
		t.Fatalf("offline repair %q", r.Differences[0].Repair)
	}
	_, r, _ = reconcileRun(t, online...)
	repair(r, paid, created, paidType)

	exec(`UPDATE orders SET state = 'PENDING_PAYMENT' WHERE reservation_id = $1`, paid)
	_, r, _ = reconcileRun(t, online...)
	only(t, r, paid, reconcile.StateMismatch)
	repair(r, paid, created, paidType)

	pending := pick(`state = 'PENDING_PAYMENT'`)
	exec(`UPDATE orders SET token_id = token_id + 1000 WHERE reservation_id = $1`, pending)
	_, r, _ = reconcileRun(t, online...)
	only(t, r, pending, reconcile.FieldMismatch)
	repair(r, pending, created)

	refunded := pick(`state = 'REFUND_REQUIRED'`)
	exec(`DELETE FROM order_refunds WHERE reservation_id = $1`, refunded)
	_, r, _ = reconcileRun(t, online...)
	only(t, r, refunded, reconcile.RefundNotRecorded)
	repair(r, refunded, created, closed, refundRequired)

	// A reservation's row deleted with its events' records: redelivered
	// as new.
	exec(`DELETE FROM orders WHERE reservation_id = $1`, refunded)
	exec(`DELETE FROM order_events WHERE subject = $1`, refunded)
	_, r, _ = reconcileRun(t, online...)
	only(t, r, refunded, reconcile.MissingOrder)
	d := r.Differences[0]
	runRepair(t, bin, d, env...)
	if status, r, _ := reconcileRun(t, online...); status != exitOK {
		t.Fatalf("after the repair of %s with its events' records gone: exit %d, %+v", refunded, status, r.Differences)
	}

	// A refund row for the payment that paid an order, which seckill never
	// recorded for refund: a difference (the payment team would give a
	// sale's money back), whose repair re-delivers nothing.
	paidTwice := pick(`state = 'PAID' AND reservation_id NOT IN (SELECT reservation_id FROM order_refunds)`)
	exec(`INSERT INTO order_refunds (reservation_id, payment_id, amount, required_at)
SELECT reservation_id, payment_id, amount, now() FROM orders WHERE reservation_id = $1`, paidTwice)
	for _, args := range [][]string{online, offline} {
		status, r, _ := reconcileRun(t, args...)
		if status != exitFailed {
			t.Fatalf("%v: a refund row seckill never recorded: exit %d", args, status)
		}
		only(t, r, paidTwice, reconcile.RefundNotInSeckill)
		if d := r.Differences[0]; d.Source != "" || len(d.Events) > 0 || !strings.Contains(d.Repair, "seckill-orders reanchor") {
			t.Fatalf("a refund row seckill never recorded: %+v", d)
		}
	}
	exec(`DELETE FROM order_refunds WHERE reservation_id = $1`, paidTwice)

	exec(`INSERT INTO orders (reservation_id, campaign_id, sku_id, request_id, user_id, token_id, state, created_at, expire_at, last_event_id)
VALUES ('rc~blue~999~0000000000000000', 'rc', 'blue', 'ghost', 'ghost', 1, 'PAID', now(), now(), 'none')`)
	status, r, _ := reconcileRun(t, online...)
	if status != exitFailed {
		t.Fatalf("an orphan order: exit %d", status)
	}
	if d := r.Differences[0]; d.Source != "" || len(d.Events) > 0 {
		t.Fatalf("an orphan order names events: %+v", d)
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
	// An unknown SKU: the server's refusal, said once.
	if status, _, stderr := reconcileRun(t, append(online, "--sku", "nope")...); status != exitUsage ||
		!strings.Contains(stderr, "reconcile: seckill: 404 NOT_FOUND") {
		t.Fatalf("an unknown SKU: exit %d, stderr %q", status, stderr)
	}
}
