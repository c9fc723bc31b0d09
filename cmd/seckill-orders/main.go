// Command seckill-orders is the reference order service: it consumes one
// seckill campaign's events into PostgreSQL (package orders), from
// seckilld's feed (--feed) or from the JetStream stream seckill-relay
// fills (--nats, --stream), or from every cell of a cluster (--etcd: each
// cell's feed, at the address it announced in etcd, with a cursor of its
// own; with --nats too, each cell's relay stream <stream>_<cell>, which
// seckill-relay --cell fills), exactly once in effect: each batch of events
// is one transaction with its cursor, and an event seen before (by its
// CloudEvents source and id) is skipped. It migrates the schema at start
// (goose), serves /metrics and /healthz on --metrics-addr, and stops
// cleanly on SIGTERM or SIGINT (the batch in flight commits or rolls back
// whole; exit 0). "seckill-orders redeliver --source S --event ID,..."
// applies those events again from the feed (by their CloudEvents source
// and id, as order_events keys them), "--reservation ID,..." every event
// of those reservations: the repairs seckillctl reconcile prints.
// "seckill-orders reanchor" is the way forward after seckilld was restored
// to an earlier point (the service stops on the feed's 409
// CURSOR_DIVERGED): it keeps the orders the abandoned records touched
// apart, reports each, and moves the cursor onto the restored feed.
//
// It may start before its campaign is defined (it waits for it, asking
// every 100 ms). A SKU whose events the feed no longer holds (snapshots
// truncated its log past the cursor: 410 CURSOR_COMPACTED; or past its
// start, for a new consumer) is resynchronised from seckilld's export,
// then followed again.
//
// Every flag is also read from the environment as SECKILL_ORDERS_<NAME>
// (--admin-token: SECKILL_ORDERS_ADMIN_TOKEN); flags win. Exit status: 0
// stopped by a signal, 1 the source refused the position (the feed's 409
// CURSOR_DIVERGED: run reanchor, a 400 such as CAMPAIGN_FEED_TOO_WIDE, a 401 or 404, a
// stream that no longer holds the next message: an operator acts) or a
// start-up failure (PostgreSQL refusing the schema migration: a wrong
// password or database, a missing permission), 2 bad flags. Anything else
// (seckilld, NATS or PostgreSQL unreachable, also at the start) is
// retried, from the cursor saved in PostgreSQL.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/peterbourgon/ff/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/cells"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/hostport"
	"github.com/seckill/seckill/internal/version"
	"github.com/seckill/seckill/ledger"
	"github.com/seckill/seckill/orders"
	"github.com/seckill/seckill/relay"
)

// errUsage marks a bad flag (exit 2).
var errUsage = errors.New("usage")

// newPool opens the pool of --database (it connects on first use): a
// --database that does not parse is a bad flag.
func newPool(ctx context.Context, database string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(database)
	if err != nil {
		return nil, fmt.Errorf("%w: --database: %v", errUsage, err)
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if ctx.Err() != nil && !errors.Is(err, errUsage) {
		err = nil // a signal during the start (a migration, a connection) is a stop too
	}
	stop()
	switch {
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "seckill-orders:", err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "seckill-orders:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	usageOut, done := version.Preamble("seckill-orders", args, stdout, stderr)
	if done {
		return nil
	}
	if len(args) > 0 && args[0] == "redeliver" {
		return redeliver(ctx, args[1:], usageOut, stdout)
	}
	if len(args) > 0 && args[0] == "reanchor" {
		return reanchor(ctx, args[1:], usageOut, stdout)
	}
	fs := flag.NewFlagSet("seckill-orders", flag.ContinueOnError)
	fs.SetOutput(usageOut)
	fs.Usage = func() {
		fmt.Fprint(usageOut, `Usage: seckill-orders [flags]             consume a campaign's sales into PostgreSQL
       seckill-orders redeliver [flags]   apply events again, as seckillctl reconcile prints (redeliver --help)
       seckill-orders reanchor [flags]    after a restore of seckilld, with the service stopped (reanchor --help; docs/feed.md)
Flags:
`)
		fs.PrintDefaults()
	}
	database := fs.String("database", "", "PostgreSQL URL, e.g. postgres://user@127.0.0.1:5432/orders (required)")
	campaign := fs.String("campaign", "", "the campaign whose events are consumed (required with --feed and --etcd)")
	feed := fs.String("feed", "", "seckilld's base URL: consume its campaign feed (give one of --feed, --etcd, --nats)")
	etcd := fs.String("etcd", "", "etcd endpoints of a cell cluster: consume each of its cells (its feed; with --nats, its relay stream)")
	prefix := fs.String("etcd-prefix", ledger.DefaultPrefix, "the cells' ledger key prefix in etcd (with --etcd)")
	token := fs.String("admin-token", "", "seckilld's admin bearer token (with --feed and --etcd)")
	natsURL := fs.String("nats", "", "NATS URL: consume the JetStream stream --stream filled by seckill-relay (with --etcd: each cell's, <stream>_<cell>)")
	stream := fs.String("stream", "", "the relay's JetStream stream of the campaign (with --nats; with --etcd too, the --stream its cells' relays were given)")
	limit := fs.Int("batch", 500, "events per transaction at most (1..1000)")
	wait := fs.Duration("wait", 30*time.Second, "how long one read waits for events (the feed's long poll; at most 60s)")
	metricsAddr := fs.String("metrics-addr", "127.0.0.1:9465", "address of /metrics and /healthz (empty: none)")
	level := fs.String("log-level", "info", "debug | info | warn | error")
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	var logLevel slog.Level
	if err := logLevel.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("%w: --log-level: %v", errUsage, err)
	}
	switch {
	case *database == "":
		return fmt.Errorf("%w: --database is required", errUsage)
	case count(*feed, *etcd, *natsURL) != 1 && !(*etcd != "" && *natsURL != "" && *feed == ""):
		return fmt.Errorf("%w: give --feed or --etcd (with --campaign, --admin-token), or --nats (with --stream), or --etcd and --nats (with --campaign, --stream)", errUsage)
	case *etcd != "" && *campaign == "", *feed != "" && *campaign == "", (*feed != "" || *etcd != "" && *natsURL == "") && *token == "":
		return fmt.Errorf("%w: --feed and --etcd need --campaign and --admin-token (--etcd with --nats: --campaign)", errUsage)
	case *natsURL != "" && *stream == "":
		return fmt.Errorf("%w: --nats needs --stream", errUsage)
	case *campaign != "" && !sku.ValidID(*campaign):
		// Never defined, so never waited for (the start-up wait is for a
		// campaign not defined yet).
		return fmt.Errorf("%w: --campaign %q: %s", errUsage, *campaign, sku.IDRule)
	case *stream != "" && relay.CheckStreamName(*stream) != nil:
		return fmt.Errorf("%w: --stream: %v", errUsage, relay.CheckStreamName(*stream))
	case *limit < 1 || *limit > 1000:
		return fmt.Errorf("%w: --batch must be 1..1000", errUsage)
	case *wait <= 0 || *wait > time.Minute:
		return fmt.Errorf("%w: --wait must be in (0, 60s]", errUsage)
	case fs.NArg() > 0:
		return fmt.Errorf("%w: unexpected arguments %v", errUsage, fs.Args())
	}
	// The addresses are checked before PostgreSQL is waited for: a
	// mistyped one is the command line's error, said at once.
	if *metricsAddr != "" {
		if err := hostport.Listen(*metricsAddr); err != nil {
			return fmt.Errorf("%w: --metrics-addr %v", errUsage, err)
		}
	}
	var feedClient *client.Client
	if *feed != "" {
		var err error
		if feedClient, err = client.New(client.Options{BaseURL: *feed, AdminToken: *token}); err != nil {
			return fmt.Errorf("%w: --feed: %v", errUsage, err)
		}
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: logLevel}))
	// A --database that does not parse is the command line's error, said
	// before anything is bound (the pool connects on first use).
	pool, err := newPool(ctx, *database)
	if err != nil {
		return err
	}
	defer pool.Close()
	// The metrics port is bound before PostgreSQL is waited for: a port
	// another process holds is said at once, not once the database is up
	// (or never, while it is not). It serves once the service consumes.
	var metricsLn net.Listener
	if *metricsAddr != "" {
		if metricsLn, err = net.Listen("tcp", *metricsAddr); err != nil {
			return fmt.Errorf("--metrics-addr: %w", err)
		}
		defer metricsLn.Close()
	}
	schema, err := migrateWhenUp(ctx, pool, log)
	if err != nil {
		return err
	}
	log.Info("orders: schema up to date", "version", schema)

	var src orders.Source
	var cluster *orders.Cells
	var nc *nats.Conn
	if *natsURL != "" {
		// A NATS server not up yet is waited for (the source's errors are
		// retried), as one that goes away later is.
		if nc, err = nats.Connect(*natsURL, nats.Name("seckill-orders "+*stream), nats.MaxReconnects(-1), nats.RetryOnFailedConnect(true)); err != nil {
			return fmt.Errorf("connecting to %s: %w", *natsURL, err)
		}
		defer nc.Close()
	}
	switch {
	case *feed != "":
		src = &orders.FeedSource{Client: feedClient, CampaignID: *campaign, Limit: *limit, Wait: *wait}
	case *etcd != "":
		ec, err := ledger.Dial(strings.Split(*etcd, ","))
		if err != nil {
			return fmt.Errorf("--etcd: %w", err)
		}
		defer ec.Close()
		cluster = &orders.Cells{Ledger: ledger.New(ec, *prefix), CampaignID: *campaign, Limit: *limit, Wait: *wait,
			JetStream: nc, Stream: *stream,
			Client: func(base string) (*client.Client, error) {
				return client.New(client.Options{BaseURL: base, AdminToken: *token})
			}}
	default:
		js := &orders.JetStreamSource{Conn: nc, Stream: *stream, Limit: *limit, Wait: *wait}
		defer js.Close()
		src = js
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := orders.NewMetrics(reg)
	if metricsLn != nil {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(metricsLn)
		defer srv.Close()
		fmt.Fprintf(stdout, "seckill-orders metrics on http://%s/metrics\n", metricsLn.Addr())
	}
	if cluster != nil {
		err = cluster.Run(ctx, orders.NewStore(pool), metrics, log)
	} else {
		err = orders.Run(ctx, src, orders.NewStore(pool), metrics, log)
	}
	if err == nil {
		log.Info("orders: stopped")
	}
	return err
}

// count returns how many of flags are set.
func count(flags ...string) int {
	n := 0
	for _, f := range flags {
		if f != "" {
			n++
		}
	}
	return n
}

// redeliver is "seckill-orders redeliver": the repairs seckillctl
// reconcile prints, applying events again from the feed whether or not
// order_events has them: the events named by source and id
// (orders.FetchEvent, Store.ApplyAgain), or every event of the named
// reservations (Store.Redeliver).
func redeliver(ctx context.Context, args []string, usageOut, stdout io.Writer) error {
	fs := flag.NewFlagSet("seckill-orders redeliver", flag.ContinueOnError)
	fs.SetOutput(usageOut)
	database := fs.String("database", "", "PostgreSQL URL of the orders (required)")
	feed := fs.String("feed", "", "seckilld's base URL (or --etcd)")
	etcd := fs.String("etcd", "", "etcd endpoints of a cell cluster: the events are read from the cell that logged them")
	prefix := fs.String("etcd-prefix", ledger.DefaultPrefix, "the cells' ledger key prefix in etcd (with --etcd)")
	token := fs.String("admin-token", "", "seckilld's admin bearer token (required)")
	source := fs.String("source", "", "the events' CloudEvents source, /seckill/<campaign>/<sku> (with --event)")
	events := fs.String("event", "", "comma-separated event ids of --source, applied in this order")
	ids := fs.String("reservation", "", "comma-separated reservation ids: every event of each, in log order (instead of --source and --event)")
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	byEvent := *source != "" || *events != ""
	switch {
	case *database == "" || *token == "" || count(*feed, *etcd) != 1 || fs.NArg() > 0:
		return fmt.Errorf("%w: redeliver needs --database, --admin-token, --feed or --etcd, and --source with --event or --reservation", errUsage)
	case byEvent == (*ids != ""), byEvent && (*source == "" || *events == ""):
		return fmt.Errorf("%w: redeliver takes --source with --event, or --reservation", errUsage)
	}
	campaignID, skuID, ok := orders.SourceSKU(*source)
	if byEvent && !ok {
		return fmt.Errorf("%w: --source %q: want /seckill/<campaign>/<sku>", errUsage, *source)
	}
	if byEvent {
		for _, id := range strings.Split(*events, ",") {
			if _, _, ok := orders.EventID(id); !ok {
				return fmt.Errorf("%w: --event %q: want <history>-<log index>, an event's id", errUsage, id)
			}
		}
	}
	newClient := func(base string) (*client.Client, error) {
		return client.New(client.Options{BaseURL: base, AdminToken: *token})
	}
	// servers are the feeds the events are read from, by cell: --feed
	// (cell ""), or the cells of the SKU, at the addresses they announced.
	servers := func(campaignID, skuID string) (map[string]*client.Client, error) {
		if *feed != "" {
			c, err := newClient(*feed)
			return map[string]*client.Client{"": c}, err
		}
		ec, err := ledger.Dial(strings.Split(*etcd, ","))
		if err != nil {
			return nil, fmt.Errorf("--etcd: %w", err)
		}
		defer ec.Close()
		addrs, err := cells.CampaignServers(ctx, ledger.New(ec, *prefix), campaignID, skuID)
		if err != nil {
			return nil, fmt.Errorf("--etcd: %w", err)
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("etcd knows no cell of %s/%s", campaignID, skuID)
		}
		cs := map[string]*client.Client{}
		for cell, addr := range addrs {
			if addr == "" {
				return nil, fmt.Errorf("cell %s of %s/%s announced no address in etcd", cell, campaignID, skuID)
			}
			if cs[cell], err = newClient(addr); err != nil {
				return nil, fmt.Errorf("cell %s: %w", cell, err)
			}
		}
		return cs, nil
	}
	pool, err := newPool(ctx, *database)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := orders.Migrate(ctx, pool); err != nil {
		return err
	}
	store := orders.NewStore(pool)
	if byEvent {
		cs, err := servers(campaignID, skuID)
		if err != nil {
			return err
		}
		var got []client.Event
		for _, id := range strings.Split(*events, ",") {
			e, err := orders.FetchEvent(ctx, slices.Collect(maps.Values(cs)), *source, id)
			if err != nil {
				return err
			}
			got = append(got, e)
		}
		if err := store.ApplyAgain(ctx, got); err != nil {
			return err
		}
		for _, e := range got {
			fmt.Fprintf(stdout, "event %s %s (%s %s): applied again\n", *source, e.ID, e.Type, e.Subject)
		}
		return nil
	}
	for _, id := range strings.Split(*ids, ",") {
		campaignID, skuID, _, _, err := sku.ParseReservationID(id)
		if err != nil {
			return fmt.Errorf("%w: --reservation %q: %v", errUsage, id, err)
		}
		cs, err := servers(campaignID, skuID)
		if err != nil {
			return err
		}
		c := cs[sku.ReservationCell(id)] // --feed's, or the cell the id names
		if c == nil && len(cs) == 1 {
			c = slices.Collect(maps.Values(cs))[0] // a campaign local to one cell
		}
		if c == nil {
			return fmt.Errorf("reservation %s: its cell is none of %s/%s's in etcd", id, campaignID, skuID)
		}
		applied, err := store.Redeliver(ctx, c, []string{id})
		for id, n := range applied {
			fmt.Fprintf(stdout, "reservation %s: %d events applied again\n", id, n)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// parseFlags parses args, and the SECKILL_ORDERS_* variables, into fs:
// help after --help (the usage was printed), a usage error (exit 2) for a
// bad command line.
func parseFlags(fs *flag.FlagSet, args []string) (help bool, err error) {
	if err := ff.Parse(fs, args, ff.WithEnvVarPrefix("SECKILL_ORDERS")); errors.Is(err, flag.ErrHelp) {
		return true, nil
	} else if err != nil {
		return false, fmt.Errorf("%w: %v", errUsage, err)
	}
	return false, nil
}
