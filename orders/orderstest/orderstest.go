// Package orderstest is what the order service's tests share: a real
// seckilld in process, a campaign sold by two seckilld cells of a real
// etcd (StartCells, for seckill-orders and seckillctl reconcile alike), a
// private PostgreSQL and its consumers, seckill-relay's loop into a NATS
// server (internal/natstest), a sale that exercises every kind of order
// event, and the wait for a clean reconciliation.
package orderstest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/httpapi/httpapitest"
	"github.com/seckill/seckill/internal/pgserver"
	"github.com/seckill/seckill/orders"
	"github.com/seckill/seckill/reconcile"
	"github.com/seckill/seckill/relay"
)

// Token is the in-process seckilld's admin token.
const Token = "orders-test-token"

// Quiet is a logger that drops everything.
var Quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// Seckill runs the engine and the HTTP service in process, on a data dir
// of its own, and returns a client of it with the admin token.
func Seckill(t testing.TB) *client.Client {
	c, _ := SeckillIn(t)
	return c
}

// SeckillIn is Seckill, also returning its data dir.
func SeckillIn(t testing.TB) (*client.Client, string) {
	return SeckillWith(t, actors.Config{})
}

// SeckillWith is SeckillIn with cfg's engine settings (its data dir and
// logger are the helper's).
func SeckillWith(t testing.TB, cfg actors.Config) (*client.Client, string) {
	t.Helper()
	dir := t.TempDir()
	cfg.DataDir = dir
	c, _ := SeckillOn(t, cfg)
	return c, dir
}

// SeckillOn runs the engine with cfg (on cfg.DataDir, which the test may
// have filled or restored; the logger is the helper's) and the HTTP
// service in process, and returns a client of it and the engine, closed
// when the test ends or before.
func SeckillOn(t testing.TB, cfg actors.Config) (*client.Client, *actors.Engine) {
	t.Helper()
	cfg.Logger = Quiet
	e, err := actors.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	base := httpapitest.Serve(t, httpapi.Config{Engine: e, Feed: feed.New(e), Lotteries: e, AdminToken: Token, Logger: Quiet})
	c, err := client.New(client.Options{BaseURL: base, AdminToken: Token})
	if err != nil {
		t.Fatal(err)
	}
	return c, e
}

// Consume runs orders.Run from src into the database at dbURL (migrated
// first) and returns its metrics' registry and a stop function, also
// called when the test ends, which fails the test unless Run stopped
// cleanly.
func Consume(t testing.TB, dbURL string, src orders.Source) (*prometheus.Registry, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := orders.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m := orders.NewMetrics(reg)
	done := make(chan error, 1)
	go func() { done <- orders.Run(ctx, src, orders.NewStore(pool), m, Quiet) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("orders.Run stopped with %v, want nil on a stop", err)
			}
			pool.Close()
		})
	}
	t.Cleanup(stop)
	return reg, stop
}

// Database returns the URL of an empty database of t's own on a private
// PostgreSQL: in a package whose TestMain runs its tests through
// WithPostgres, a database "orders_<n>" of the one server all its tests
// share, dropped when t ends (initdb and the server's start cost more CPU
// than most of these tests' sales, paid once instead of once per test);
// otherwise a database "orders" of a server started for t alone.
func Database(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	if !sharedPostgres.enabled {
		s := pgserver.ForTest(t, nil)
		createDatabase(t, s, "orders")
		return s.URL("orders")
	}
	sharedPostgres.once.Do(func() {
		sharedPostgres.server, sharedPostgres.err = pgserver.Start(ctx, pgserver.Options{})
	})
	if sharedPostgres.err != nil {
		t.Fatal(sharedPostgres.err)
	}
	s := sharedPostgres.server
	name := fmt.Sprintf("orders_%d", sharedPostgres.databases.Add(1))
	createDatabase(t, s, name)
	t.Cleanup(func() {
		// The test's consumers and services stopped in cleanups that ran
		// before this one (registered after Database); FORCE ends any
		// connection of theirs still open.
		conn, err := pgx.Connect(ctx, s.URL("postgres"))
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	return s.URL(name)
}

// createDatabase creates the empty database name on s.
func createDatabase(t testing.TB, s *pgserver.Server, name string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
}

// Runner is what TestMain runs: a *testing.M, or one WithPostgres wraps.
type Runner interface{ Run() int }

// WithPostgres returns m whose Run makes Database share one PostgreSQL
// among the package's tests (started by the first of them) and stops
// that server once they are done. Call it from TestMain:
// os.Exit(orderstest.WithPostgres(m).Run()).
func WithPostgres(m Runner) Runner { return postgresRunner{m} }

type postgresRunner struct{ m Runner }

func (r postgresRunner) Run() int {
	sharedPostgres.enabled = true
	code := r.m.Run()
	if s := sharedPostgres.server; s != nil {
		if err := s.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "orderstest: stop the shared PostgreSQL:", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// sharedPostgres is the server Database shares under WithPostgres.
var sharedPostgres struct {
	enabled   bool
	once      sync.Once
	server    *pgserver.Server
	err       error
	databases atomic.Int64
}

// Relay runs seckill-relay's loop (package relay) from the campaign feed
// at base into stream until the test ends.
func Relay(t testing.TB, nc *nats.Conn, base, campaignID, stream string) {
	t.Helper()
	RelayCell(t, nc, base, campaignID, stream, "")
}

// RelayCell is Relay for the feed of cell (seckill-relay --cell): into
// the stream relay.CellStream(stream, cell).
func RelayCell(t testing.TB, nc *nats.Conn, base, campaignID, stream, cell string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sink, err := relay.NewCellNATSSink(nc, stream, campaignID, cell)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- relay.Run(ctx, relay.Config{FeedURL: base, AdminToken: Token, CampaignID: campaignID, Wait: time.Second,
			RetryAfter: 50 * time.Millisecond, Logger: Quiet}, sink)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("relay: %v", err)
		}
	})
}

// SKUs are the sale's SKUs ("." in an id on purpose: the relay escapes it).
var SKUs = []string{"red.1", "blue"}

// Define defines campaignID with SKUs of units units each, open now.
func Define(t testing.TB, c *client.Client, campaignID string, units int64) {
	t.Helper()
	start := time.Now().Add(-time.Minute).Truncate(time.Second)
	skus := make([]client.CampaignSKU, len(SKUs))
	for i, s := range SKUs {
		skus[i] = client.CampaignSKU{SKUID: s, SaleLimit: units}
	}
	if err := c.PutCampaign(context.Background(), client.Campaign{CampaignID: campaignID, StartAt: start, EndAt: start.Add(time.Hour),
		PaymentWindow: 15 * time.Minute, ReleaseOnClose: true, SKUs: skus}); err != nil {
		t.Fatal(err)
	}
}

// Sale runs buyers from..to-1 of campaignID: each reserves on a SKU, and
// by its number pays (i%3 == 0), pays twice with two payment ids (i%7 ==
// 0: a refund on a PAID reservation), cancels (i%5 == 1), or cancels and
// pays after the close (i%11 == 2: REFUND_REQUIRED). SOLD_OUT is an
// answer, not an error.
func Sale(t testing.TB, c *client.Client, campaignID string, from, to int) {
	t.Helper()
	ctx := context.Background()
	for i := from; i < to; i++ {
		r, err := c.Reserve(ctx, client.ReserveRequest{CampaignID: campaignID, SKUID: SKUs[i%len(SKUs)], UserID: fmt.Sprint("u", i), RequestID: fmt.Sprint("r", i)})
		if errors.Is(err, client.ErrSoldOut) {
			continue
		}
		if err != nil {
			t.Fatalf("buyer %d: reserve: %v", i, err)
		}
		switch {
		case i%3 == 0:
			_, err = c.Pay(ctx, r.ReservationID, client.Payment{PaymentID: fmt.Sprint("p", i), Amount: 1999})
			if err == nil && i%7 == 0 {
				_, err = c.Pay(ctx, r.ReservationID, client.Payment{PaymentID: fmt.Sprint("p", i, "-again"), Amount: 1999})
				if errors.Is(err, client.ErrPaymentConflict) {
					err = nil
				}
			}
		case i%5 == 1:
			_, err = c.Cancel(ctx, r.ReservationID)
		case i%11 == 2:
			if _, err = c.Cancel(ctx, r.ReservationID); err == nil {
				_, err = c.Pay(ctx, r.ReservationID, client.Payment{PaymentID: fmt.Sprint("late", i), Amount: 1999})
				if errors.Is(err, client.ErrRefundRequired) {
					err = nil
				}
			}
		}
		if err != nil {
			t.Fatalf("buyer %d: %v", i, err)
		}
	}
}

// Reconcile compares campaignID on c's seckilld with the orders at dbURL,
// with no lag: every reservation is judged.
func Reconcile(t testing.TB, c *client.Client, dbURL, campaignID string) reconcile.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	byID, err := reconcile.LoadOrders(ctx, dbURL, campaignID, "")
	if err != nil {
		t.Fatal(err)
	}
	reservations, skus, err := reconcile.FromServer(ctx, c, campaignID, "")
	if err != nil {
		t.Fatal(err)
	}
	return reconcile.Compare(campaignID, "", reservations, skus, byID, 0, time.Now())
}

// WaitClean waits (at most 2 minutes) until the orders at dbURL reconcile
// clean with campaignID: the consumer has caught up, and nothing differs.
func WaitClean(t testing.TB, c *client.Client, dbURL, campaignID string) reconcile.Report {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r := Reconcile(t, c, dbURL, campaignID)
		if r.Clean {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("the orders never reconciled clean: %d differences, first %+v", len(r.Differences), r.Differences[0])
		}
		time.Sleep(50 * time.Millisecond)
	}
}
