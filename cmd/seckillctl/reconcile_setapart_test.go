package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seckill/seckill/orders"
	"github.com/seckill/seckill/orders/orderstest"
)

// What re-anchorings set apart (diverged_orders, diverged_refunds) is in
// reconcile's report, counted by SKU and reason with the rows that held
// money, and named on its verdict line; the orders left still reconcile
// clean.
func TestReconcileReportsWhatReanchoringsSetApart(t *testing.T) {
	c := orderstest.Seckill(t)
	db := orderstest.Database(t)
	orderstest.Define(t, c, "sa", 30)
	_, stop := orderstest.Consume(t, db, &orders.FeedSource{Client: c, CampaignID: "sa", Limit: 50, Wait: time.Second})
	orderstest.Sale(t, c, "sa", 0, 20)
	orderstest.WaitClean(t, c, db, "sa")
	stop()

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var id int64
	if err := conn.QueryRow(ctx, `INSERT INTO order_reanchors (consumer, campaign_id, sku_id, fork_index, history, as_of_index, cursor)
VALUES ('feed:sa', 'sa', 'red.1', 10, '', 20, '') RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		// An abandoned sale that was paid, one that was not, and a refund
		// row not refunded yet.
		`INSERT INTO diverged_orders SELECT $1, 'NOT_IN_SECKILL', o.* FROM orders o
WHERE sku_id = 'red.1' AND reservation_id IN ((SELECT min(reservation_id) FROM orders WHERE sku_id = 'red.1' AND payment_id IS NOT NULL),
    (SELECT min(reservation_id) FROM orders WHERE sku_id = 'red.1' AND payment_id IS NULL))`,
		`INSERT INTO diverged_refunds (reanchor_id, reservation_id, payment_id, amount, required_at) VALUES ($1, 'sa~red.1~99~0000000000000000', 'p-gone', 1999, now())`,
	} {
		if _, err := conn.Exec(ctx, sql, id); err != nil {
			t.Fatal(err)
		}
	}

	args := []string{"--orders", db, "--campaign", "sa", "--server", c.BaseURL(), "--admin-token", orderstest.Token, "--lag", "0s"}
	status, r, stderr := reconcileRun(t, args...)
	if status != exitOK || !r.Clean {
		t.Fatalf("exit %d, %+v; %s", status, r, stderr)
	}
	want := []orders.SetApart{{SKUID: "red.1", Reason: orders.DivergedNotInSeckill, Rows: 2, WithMoney: 1},
		{SKUID: "red.1", Reason: orders.RefundNotInSeckill, Rows: 1, WithMoney: 1}}
	if len(r.SetApart) != len(want) || r.SetApart[0] != want[0] || r.SetApart[1] != want[1] {
		t.Fatalf("set apart: %+v, want %+v", r.SetApart, want)
	}
	var out, errb bytes.Buffer
	if status := run(append([]string{"reconcile"}, args...), &out, &errb); status != exitOK ||
		!strings.Contains(out.String(), "set apart sku red.1: NOT_IN_SECKILL 2 (1 with money to settle)") ||
		!strings.Contains(out.String(), "clean; 3 rows set apart by re-anchorings") {
		t.Fatalf("exit %d:\n%s%s", status, out.String(), errb.String())
	}
	t.Logf("%s", out.String())
}
