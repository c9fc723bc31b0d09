package orders_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/httpapi/httpapitest"
	"github.com/seckill/seckill/internal/natstest"
	"github.com/seckill/seckill/orders"
	"github.com/seckill/seckill/orders/orderstest"
	"github.com/seckill/seckill/relay"
)

// After seckilld was restored to an earlier point and seckill-relay
// reanchor moved the relay's stream onto the restored log, a consumer of
// the stream stops at the relay's seckill.relay.reanchored message (a
// *Diverged naming the stream). Its Reanchor sets apart what the SKU's
// abandoned messages touched, takes the SKU from the restored seckilld's
// export and goes on after the message, skipping the SKU's messages the
// export covers: the orders then reconcile clean with the restored seckill.
func TestReanchorAJetStreamConsumerAfterARestore(t *testing.T) {
	ctx := context.Background()
	db := orderstest.Database(t)
	nc := natstest.Start(t)
	serve := func(dir string) (*client.Client, string, *actors.Engine) {
		e, err := actors.Open(actors.Config{DataDir: dir, Logger: orderstest.Quiet})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		base := httpapitest.Serve(t, httpapi.Config{Engine: e, Feed: feed.New(e), AdminToken: orderstest.Token, Logger: orderstest.Quiet})
		c, err := client.New(client.Options{BaseURL: base, AdminToken: orderstest.Token})
		if err != nil {
			t.Fatal(err)
		}
		return c, base, e
	}
	sink, err := relay.NewNATSSink(nc, "SECKILL_RS", "rs")
	if err != nil {
		t.Fatal(err)
	}
	cfgOf := func(base string) relay.Config {
		return relay.Config{FeedURL: base, AdminToken: orderstest.Token, CampaignID: "rs", Wait: time.Second, RetryAfter: 10 * time.Millisecond, Logger: orderstest.Quiet}
	}
	runRelay := func(base string) (stop func()) {
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- relay.Run(rctx, cfgOf(base), sink) }()
		return func() {
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("relay: %v", err)
			}
		}
	}

	source, restored := t.TempDir(), t.TempDir()
	c, base, e := serve(source)
	orderstest.Define(t, c, "rs", 40)
	orderstest.Sale(t, c, "rs", 0, 30)
	stopRelay := runRelay(base)
	src := &orders.JetStreamSource{Conn: nc, Stream: "SECKILL_RS", Limit: 7, Wait: time.Second}
	_, stop := orderstest.Consume(t, db, src)
	orderstest.WaitClean(t, c, db, "rs")
	fork, _ := pastTheFork(t, c, db)
	stop()
	stopRelay()
	e.Close()
	restoreToFork(t, source, restored, fork)
	c2, base2, _ := serve(restored)
	orderstest.Sale(t, c2, "rs", 60, 80) // new sales, on ids the abandoned records used too

	if err := relay.Run(ctx, cfgOf(base2), sink); !errors.Is(err, client.ErrCursorDiverged) {
		t.Fatalf("the relay on the restored seckilld returned %v, want the feed's 409", err)
	}
	if done, err := relay.Reanchor(ctx, cfgOf(base2), sink); err != nil || len(done) != 1 {
		t.Fatalf("relay.Reanchor: %+v, %v", done, err)
	}
	stopRelay = runRelay(base2)
	defer stopRelay()

	pool, err := pgxpool.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	store := orders.NewStore(pool)
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	err = orders.Run(rctx, src, store, orders.NewMetrics(prometheus.NewRegistry()), orderstest.Quiet)
	cancel()
	var d *orders.Diverged
	if !errors.As(err, &d) || !errors.Is(err, orders.ErrPosition) || d.SKUID != "red.1" || d.ForkIndex != fork || d.Stream != "SECKILL_RS" {
		t.Fatalf("the service on the re-anchored stream returned %v, want a *Diverged of red.1 at %d in stream SECKILL_RS", err, fork)
	}
	t.Logf("%v", err)

	done, err := src.Reanchor(ctx, store, src.Name(), &orders.FeedSource{Client: c2, CampaignID: "rs"})
	if err != nil || len(done) != 1 {
		t.Fatalf("Reanchor: %v, %+v", err, done)
	}
	r := done[0]
	reasons := map[string]int{}
	for _, o := range r.Orders {
		t.Logf("%s", o)
		reasons[o.Reason]++
	}
	if reasons[orders.DivergedNotInSeckill]+reasons[orders.DivergedOtherSale] == 0 || reasons[orders.DivergedRewound] != 1 || r.Events == 0 {
		t.Fatalf("re-anchored %+v: want orders of abandoned reservations and the one rewound", r)
	}
	if n := count(t, db, `SELECT count(*) FROM order_events WHERE source = '/seckill/rs/red.1' AND seckill_index > $1 AND id NOT LIKE $2 || '-%'`, int64(fork), r.History); n != 0 {
		t.Fatalf("%d abandoned events left in order_events", n)
	}
	if n := count(t, db, `SELECT count(*) FROM diverged_events WHERE reanchor_id = $1`, r.ID); n != r.Events {
		t.Fatalf("diverged_events holds %d events, the report %d", n, r.Events)
	}

	// The service goes on after the marker; new sales after the
	// re-anchoring come through the stream too.
	orderstest.Consume(t, db, src)
	orderstest.Sale(t, c2, "rs", 80, 90)
	orderstest.WaitClean(t, c2, db, "rs")
	// The restored log's messages the export covered were skipped, not
	// applied again over it.
	if n := count(t, db, `SELECT count(*) FROM order_events WHERE source = '/seckill/rs/red.1' AND id LIKE $1 || '-%' AND seckill_index <= $2`,
		r.History, int64(r.AsOfIndex)); n != 0 {
		t.Fatalf("%d of the restored log's events up to the export's record %d were applied after the re-anchoring", n, r.AsOfIndex)
	}
	if n := count(t, db, `SELECT count(*) FROM order_events WHERE source = '/seckill/rs/red.1' AND id LIKE $1 || '-%'`, r.History); n == 0 {
		t.Fatal("no event of the restored log after the export was applied")
	}
	if again, err := src.Reanchor(ctx, store, src.Name(), &orders.FeedSource{Client: c2, CampaignID: "rs"}); err != nil || len(again) != 0 {
		t.Fatalf("Reanchor once the service went on past the marker: %v, %+v", err, again)
	}
}
