package orders_test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/testbin"
	"github.com/seckill/seckill/orders"
	"github.com/seckill/seckill/orders/orderstest"
)

// After seckilld was restored to an earlier point the service stops on the
// feed's 409 (a *Diverged naming reanchor). Reanchor keeps every order the
// abandoned records touched in diverged_orders (those the restored seckill
// does not have, or has for another sale, leave orders; one paid after the
// fork goes back to its restored state), moves the abandoned events
// aside, and moves the cursor onto the restored feed: the service then
// follows it, the new sales re-using the abandoned reservation ids get
// their orders, and the orders reconcile clean with the restored seckill.
func TestReanchorAfterARestore(t *testing.T) {
	ctx := context.Background()
	db := orderstest.Database(t)
	source, restored := t.TempDir(), t.TempDir()
	c, e := orderstest.SeckillOn(t, actors.Config{DataDir: source})
	orderstest.Define(t, c, "rs", 40)
	orderstest.Sale(t, c, "rs", 0, 30)
	_, stop := orderstest.Consume(t, db, &orders.FeedSource{Client: c, CampaignID: "rs", Limit: 7, Wait: time.Second})
	orderstest.WaitClean(t, c, db, "rs")
	fork, pending := pastTheFork(t, c, db)
	stop()
	e.Close()
	restoreToFork(t, source, restored, fork)
	c2, _ := orderstest.SeckillOn(t, actors.Config{DataDir: restored})
	orderstest.Sale(t, c2, "rs", 60, 80) // new sales, on ids the abandoned records used too

	pool, err := pgxpool.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	store := orders.NewStore(pool)
	src := &orders.FeedSource{Client: c2, CampaignID: "rs", Limit: 7, Wait: time.Second}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	err = orders.Run(rctx, src, store, orders.NewMetrics(prometheus.NewRegistry()), orderstest.Quiet)
	cancel()
	var d *orders.Diverged
	if !errors.As(err, &d) || !errors.Is(err, orders.ErrPosition) || d.SKUID != "red.1" || d.ForkIndex != fork {
		t.Fatalf("the service on the restored seckilld returned %v, want a *Diverged of red.1 at %d", err, fork)
	}
	t.Logf("%v", err)
	before := count(t, db, `SELECT count(*) FROM orders`)

	done, err := src.Reanchor(ctx, store, src.Name())
	if err != nil || len(done) != 1 {
		t.Fatalf("Reanchor: %v, %+v", err, done)
	}
	r := done[0]
	reasons := map[string]int{}
	for _, o := range r.Orders {
		t.Logf("%s", o)
		reasons[o.Reason]++
		if o.ReservationID == pending && (o.Reason != orders.DivergedRewound || o.State != orders.StatePaid || o.PaymentID != "abandoned-payment" ||
			o.Seckill != orders.StatePendingPayment) {
			t.Errorf("the order paid after the fork: %+v, want REWOUND from PAID to PENDING_PAYMENT", o)
		}
	}
	if reasons[orders.DivergedNotInSeckill]+reasons[orders.DivergedOtherSale] == 0 || reasons[orders.DivergedRewound] != 1 || r.Events == 0 {
		t.Fatalf("re-anchored %+v: want orders of abandoned reservations and the one rewound", r)
	}
	if len(r.Refunds) == 0 || count(t, db, `SELECT count(*) FROM diverged_refunds WHERE reanchor_id = $1`, r.ID) != len(r.Refunds) {
		t.Fatalf("refund rows set apart: %+v, want the second payment of an abandoned order", r.Refunds)
	}
	if n := count(t, db, `SELECT count(*) FROM diverged_orders WHERE reanchor_id = $1`, r.ID); n != len(r.Orders) {
		t.Fatalf("diverged_orders holds %d rows, the report %d", n, len(r.Orders))
	}
	if n := count(t, db, `SELECT count(*) FROM diverged_orders WHERE reservation_id = $1 AND payment_id = 'abandoned-payment' AND state = 'PAID'`, pending); n != 1 {
		t.Fatal("the rewound order's row before is not kept")
	}
	if n := count(t, db, `SELECT count(*) FROM order_events WHERE source = '/seckill/rs/red.1' AND seckill_index > $1`, int64(fork)); n != 0 {
		t.Fatalf("%d abandoned events left in order_events", n)
	}
	if n := count(t, db, `SELECT count(*) FROM diverged_events WHERE reanchor_id = $1`, r.ID); n != r.Events {
		t.Fatalf("diverged_events holds %d events, the report %d", n, r.Events)
	}
	left := reasons[orders.DivergedNotInSeckill] + reasons[orders.DivergedOtherSale]
	if n := count(t, db, `SELECT count(*) FROM orders o JOIN diverged_orders d USING (reservation_id)
WHERE d.reanchor_id = $1 AND d.reason <> 'REWOUND' AND o.user_id = d.user_id AND o.request_id = d.request_id`, r.ID); n != 0 {
		t.Fatalf("%d orders set apart are still in orders", n)
	}
	t.Logf("%d orders before, %d set apart (%v)", before, left, reasons)

	// The service goes on from the restored feed.
	orderstest.Consume(t, db, src)
	orderstest.WaitClean(t, c2, db, "rs")
	if again, err := src.Reanchor(ctx, store, src.Name()); err != nil || len(again) != 0 {
		t.Fatalf("Reanchor once the service follows the restored feed: %v, %+v", err, again)
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// pgxQueryRow scans one row of query into dst.
func pgxQueryRow(t *testing.T, dbURL, query string, dst ...any) error {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	return conn.QueryRow(context.Background(), query).Scan(dst...)
}

// pastTheFork returns red.1's durable index in campaign rs (the fork point
// of a restore) and then records past it what a restore abandons: the
// payment of paid, an order made before it, and the sales of users 30 to
// 59, waiting until the consumer of db holds them all.
func pastTheFork(t *testing.T, c *client.Client, db string) (fork uint64, paid string) {
	t.Helper()
	ctx := context.Background()
	page, err := c.Feed(ctx, client.FeedRequest{CampaignID: "rs", SKUID: "red.1", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := pgxQueryRow(t, db, `SELECT reservation_id FROM orders WHERE sku_id = 'red.1' AND state = 'PENDING_PAYMENT' ORDER BY reservation_id LIMIT 1`, &paid); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pay(ctx, paid, client.Payment{PaymentID: "abandoned-payment", Amount: 500}); err != nil {
		t.Fatal(err)
	}
	orderstest.Sale(t, c, "rs", 30, 60)
	orderstest.WaitClean(t, c, db, "rs")
	return page.DurableIndex, paid
}

// restoreToFork runs seckillctl restore of campaign rs from source into
// restored: red.1 to the fork point, blue as it is.
func restoreToFork(t *testing.T, source, restored string, fork uint64) {
	t.Helper()
	seckillctl := testbin.Build(t, "github.com/seckill/seckill/cmd/seckillctl")
	for _, args := range [][]string{
		{"restore", "--from", filepath.Join(source, "rs", "red.1"), "--to", restored, "--until-index", itoa(fork)},
		{"restore", "--from", filepath.Join(source, "rs", "blue"), "--to", restored},
	} {
		if out, err := exec.Command(seckillctl, args...).CombinedOutput(); err != nil {
			t.Fatalf("seckillctl %v: %v\n%s", args, err, out)
		}
	}
}
