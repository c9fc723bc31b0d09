package orders_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/orders"
	"github.com/seckill/seckill/orders/orderstest"
	"github.com/seckill/seckill/reconcile"
)

// A seckilld started on an older copy of its data dir keeps the log's
// history, and once the copy has sold past the service's cursor the feed
// takes that cursor: the records up to it are the copy's, not those the
// service applied. The service, started again, checks the last event it
// applied of each SKU against the feed and stops as on the feed's 409 (a
// *Diverged naming reanchor); Reanchor sets apart what the abandoned
// records did, and the service then holds every sale of the copy as an
// order, once (the orders reconcile clean with it).
func TestAnOlderCopyThatSoldPastTheCursorIsCaught(t *testing.T) {
	ctx := context.Background()
	db := orderstest.Database(t)
	source, older := t.TempDir(), t.TempDir()
	c, e := orderstest.SeckillOn(t, actors.Config{DataDir: source})
	orderstest.Define(t, c, "rs", 40)
	orderstest.Sale(t, c, "rs", 0, 30)
	_, stop := orderstest.Consume(t, db, &orders.FeedSource{Client: c, CampaignID: "rs", Limit: 7, Wait: time.Second})
	orderstest.WaitClean(t, c, db, "rs")
	stop()
	copied := durable(t, c)
	e.Close()
	if out, err := exec.Command("cp", "-a", source+"/.", older).CombinedOutput(); err != nil {
		t.Fatalf("copying the data dir: %v\n%s", err, out)
	}

	// The original sells on; the service applies it.
	c1, e1 := orderstest.SeckillOn(t, actors.Config{DataDir: source})
	_, stop = orderstest.Consume(t, db, &orders.FeedSource{Client: c1, CampaignID: "rs", Limit: 7, Wait: time.Second})
	orderstest.Sale(t, c1, "rs", 30, 60)
	orderstest.WaitClean(t, c1, db, "rs")
	stop()
	reached := durable(t, c1)
	e1.Close()

	// The older copy serves, and sells past the service's cursor on every
	// SKU (new buyers; SOLD_OUT answers are records too).
	c2, _ := orderstest.SeckillOn(t, actors.Config{DataDir: older})
	for from := 100; ; from += 20 {
		now := durable(t, c2)
		if now["red.1"] > reached["red.1"] && now["blue"] > reached["blue"] {
			break
		}
		orderstest.Sale(t, c2, "rs", from, from+20)
	}

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
	if !errors.As(err, &d) || !errors.Is(err, orders.ErrPosition) || d.History != "" || !strings.Contains(err.Error(), "seckill-orders reanchor") {
		t.Fatalf("the service on the older copy returned %v, want a *Diverged naming reanchor", err)
	}
	t.Logf("%v", err)
	if d.ForkIndex != copied[d.SKUID] {
		t.Fatalf("fork index %d of %s, want %d: the copy's last record, an event the service applied", d.ForkIndex, d.SKUID, copied[d.SKUID])
	}

	done, err := src.Reanchor(ctx, store, src.Name())
	if err != nil || len(done) != 2 {
		t.Fatalf("Reanchor: %v, %+v: want both SKUs re-anchored", err, done)
	}
	for _, r := range done {
		t.Logf("SKU %s: after record %d, %d events and %d orders set apart", r.SKUID, r.ForkIndex, r.Events, len(r.Orders))
		if r.Events == 0 || len(r.Orders) == 0 || r.ForkIndex != copied[r.SKUID] {
			t.Errorf("SKU %s: nothing set apart: %+v", r.SKUID, r)
		}
		if n := count(t, db, `SELECT count(*) FROM diverged_orders WHERE reanchor_id = $1`, r.ID); n != len(r.Orders) {
			t.Errorf("diverged_orders holds %d rows of SKU %s, the report %d", n, r.SKUID, len(r.Orders))
		}
	}

	// seckillctl reconcile reports what was set apart.
	setApart, err := reconcile.LoadSetApart(ctx, db, "rs", "")
	if err != nil {
		t.Fatal(err)
	}
	counted := map[string]int{}
	for _, s := range setApart {
		if s.Reason != orders.RefundNotInSeckill {
			counted[s.SKUID] += int(s.Rows)
		}
	}
	for _, r := range done {
		if counted[r.SKUID] != len(r.Orders) {
			t.Errorf("reconcile counts %d orders of %s set apart, the re-anchoring %d", counted[r.SKUID], r.SKUID, len(r.Orders))
		}
	}

	// The service follows the copy: each of its sales is an order, once.
	orderstest.Consume(t, db, src)
	report := orderstest.WaitClean(t, c2, db, "rs")
	if n := count(t, db, `SELECT count(*) FROM orders`); n != report.Compared {
		t.Fatalf("%d orders for the copy's %d reservations", n, report.Compared)
	}
	if again, err := src.Reanchor(ctx, store, src.Name()); err != nil || len(again) != 0 {
		t.Fatalf("Reanchor once the service follows the copy: %v, %+v", err, again)
	}
}

// durable returns each SKU's durable log index in campaign rs.
func durable(t *testing.T, c *client.Client) map[string]uint64 {
	t.Helper()
	at := map[string]uint64{}
	for _, s := range orderstest.SKUs {
		page, err := c.Feed(context.Background(), client.FeedRequest{CampaignID: "rs", SKUID: s, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		at[s] = page.DurableIndex
	}
	return at
}
