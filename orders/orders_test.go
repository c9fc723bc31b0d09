package orders_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/natstest"
	"github.com/seckill/seckill/orders"
	"github.com/seckill/seckill/orders/orderstest"
)

// consumer runs orders.Run from src into the database at dbURL until the
// test ends, and returns its metrics' registry.
func consumer(t *testing.T, dbURL string, src orders.Source) *prometheus.Registry {
	reg, _ := orderstest.Consume(t, dbURL, src)
	return reg
}

// value reads a counter of reg (0 when absent).
func value(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

// count runs a count(*) query.
func count(t *testing.T, dbURL, query string, args ...any) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// The feed straight into PostgreSQL: every reservation of a sale with
// payments, cancels, refunds after the close and second payments gets its
// order in its state, every event is recorded once, and a stop is clean.
func TestFeedIntoOrders(t *testing.T) {
	c := orderstest.Seckill(t)
	db := orderstest.Database(t)
	// Started before its campaign is defined, as a service deployed ahead
	// of its sale: it waits for it.
	consumer(t, db, &orders.FeedSource{Client: c, CampaignID: "sale", Limit: 7, Wait: time.Second})
	orderstest.Define(t, c, "sale", 40)
	orderstest.Sale(t, c, "sale", 0, 120) // 80 units for 120 buyers: some SOLD_OUT, some back on sale
	r := orderstest.WaitClean(t, c, db, "sale")
	if r.Compared == 0 {
		t.Fatal("nothing compared")
	}
	for state, want := range map[string]int{orders.StatePaid: 1, orders.StateClosed: 1, orders.StateRefundRequired: 1, orders.StatePendingPayment: 1} {
		if n := count(t, db, `SELECT count(*) FROM orders WHERE state = $1`, state); n < want {
			t.Errorf("%d orders %s: the sale makes some", n, state)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM order_refunds r JOIN orders o USING (reservation_id) WHERE o.state = 'PAID'`); n == 0 {
		t.Error("no refund row of a second payment on a paid order")
	}
	events := 0
	for cursor := ""; ; {
		page, err := c.Feed(context.Background(), client.FeedRequest{CampaignID: "sale", After: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Events) == 0 {
			break
		}
		events, cursor = events+len(page.Events), page.NextCursor
	}
	if n := count(t, db, `SELECT count(*) FROM order_events`); n != events {
		t.Fatalf("order_events holds %d events, the feed %d", n, events)
	}
}

// The relay's JetStream stream into PostgreSQL, with events delivered
// twice: the orders reconcile clean and every duplicate is skipped.
func TestJetStreamIntoOrders(t *testing.T) {
	c := orderstest.Seckill(t)
	db := orderstest.Database(t)
	nc := natstest.Start(t)
	orderstest.Define(t, c, "js", 30)
	orderstest.Relay(t, nc, c.BaseURL(), "js", "SECKILL_JS")
	orderstest.Sale(t, c, "js", 0, 40)
	reg := consumer(t, db, &orders.JetStreamSource{Conn: nc, Stream: "SECKILL_JS", Limit: 5, Wait: time.Second})
	orderstest.WaitClean(t, c, db, "js")

	// Every event twice more, through another stream (a second relay, a
	// replay after an operator's mistake): all skipped, by (source, id).
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	stream, err := js.Stream(ctx, "SECKILL_JS")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "COPY", Subjects: []string{"copy.>"}}); err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= info.State.LastSeq; seq++ {
		msg, err := stream.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := js.Publish(ctx, "copy.events", msg.Data); err != nil {
				t.Fatal(err)
			}
		}
	}
	events := count(t, db, `SELECT count(*) FROM order_events`)
	copies := consumer(t, db, &orders.JetStreamSource{Conn: nc, Stream: "COPY", Limit: 9, Wait: time.Second})
	const duplicates = "seckill_orders_events_duplicate_total"
	for deadline := time.Now().Add(time.Minute); value(t, copies, duplicates) < float64(2*info.State.LastSeq); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%v duplicates skipped, want %d", value(t, copies, duplicates), 2*info.State.LastSeq)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM order_events`); n != events || value(t, copies, "seckill_orders_events_applied_total") != 0 {
		t.Fatalf("the copies changed order_events from %d to %d rows", events, n)
	}
	orderstest.WaitClean(t, c, db, "js")
	if value(t, reg, duplicates) != 0 {
		t.Fatalf("the relay's stream delivered %v duplicates", value(t, reg, duplicates))
	}

	// The sale goes on: the first consumer follows it.
	orderstest.Sale(t, c, "js", 40, 60)
	orderstest.WaitClean(t, c, db, "js")
}

// Snapshots truncate the SKUs' logs past a stopped consumer's cursor (410
// CURSOR_COMPACTED) and past the start a new consumer would read from: each
// resynchronises the SKUs from the export and then follows the feed, and
// their orders reconcile clean.
func TestResyncAfterCompaction(t *testing.T) {
	cfg := actors.Config{SnapshotEvery: 10, SnapshotKeep: 1}
	cfg.WAL.SegmentSize = 512 // truncation removes whole segments
	c, _ := orderstest.SeckillWith(t, cfg)
	db := orderstest.Database(t)
	orderstest.Define(t, c, "gone", 20000)
	src := &orders.FeedSource{Client: c, CampaignID: "gone", Limit: 5, Wait: time.Second}
	_, stop := orderstest.Consume(t, db, src)
	orderstest.Sale(t, c, "gone", 0, 20)
	orderstest.WaitClean(t, c, db, "gone")
	stop()

	// The sale goes on without the consumer, until its cursor is gone.
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	saved, err := orders.NewStore(pool).Cursor(ctx, src.Name())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for i := 20; ; i += 20 {
		orderstest.Sale(t, c, "gone", i, i+20) // snapshots are written, and the log truncated, behind the sale
		if _, err := c.Feed(ctx, client.FeedRequest{CampaignID: "gone", After: saved, Limit: 1}); errors.Is(err, client.ErrCursorCompacted) {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the cursor was not compacted within a minute: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	reg, _ := orderstest.Consume(t, db, src)
	orderstest.Sale(t, c, "gone", 1000, 1010)
	orderstest.WaitClean(t, c, db, "gone")
	if n := value(t, reg, "seckill_orders_resyncs_total"); n < 1 {
		t.Fatalf("%v resyncs", n)
	}

	// A new consumer with an empty database: the SKUs' first records are
	// gone, so it starts from the export too.
	fresh := orderstest.Database(t)
	reg, _ = orderstest.Consume(t, fresh, &orders.FeedSource{Client: c, CampaignID: "gone", Limit: 50, Wait: time.Second})
	orderstest.WaitClean(t, c, fresh, "gone")
	if n := value(t, reg, "seckill_orders_resyncs_total"); n != float64(len(orderstest.SKUs)) {
		t.Fatalf("%v resyncs, want one per SKU", n)
	}
}
