// Command seckilld is the seckill flash-sale sequencer: the HTTP service of
// package httpapi over the engine of package actors (one actor and one
// fsynced log per SKU).
//
//	seckilld [--addr 127.0.0.1:8080] [--data-dir ./data] [--campaigns FILE]
//	         [--admin-token T] [--payment-secret S] [--max-queue-wait 1s]
//	         [--max-skus N] [--fsync always|never] [--log-level info]
//	         [--cell ID --etcd HOST:PORT,... [--etcd-prefix /seckill/v1]]
//
// Every flag can also be given as SECKILL_<FLAG> (SECKILL_DATA_DIR, ...).
// Without --campaigns the demo campaign (demo/sku-1, 10,000 tokens, open
// for 24 h from the first start) is defined on first start. SIGINT or
// SIGTERM stops accepting, finishes the requests in flight, flushes and
// fsyncs every log and exits 0.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/internal/version"
	"github.com/seckill/seckill/wal"
	"github.com/valyala/fasthttp"
)

// shutdownTimeout bounds the wait for requests in flight at shutdown.
const shutdownTimeout = 30 * time.Second

func main() {
	actors.TuneProcs()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	usageOut, done := version.Preamble("seckilld", args, stdout, stderr)
	if done {
		return 0
	}
	opts, err := parseOptions(args, usageOut)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "seckilld:", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: opts.logLevel}))
	if err := serve(opts, stdout, log); err != nil {
		log.Error("seckilld stopped", "err", err)
		return 1
	}
	return 0
}

func serve(opts options, stdout io.Writer, log *slog.Logger) (err error) {
	if opts.fsync == wal.FsyncNeverBenchmarkOnly {
		log.Warn("--fsync never: acknowledged reservations can be lost on a crash; benchmarks only")
	}
	if opts.paymentSecret == "" {
		log.Warn("no --payment-secret: payment callbacks are accepted unsigned")
	}
	if opts.cpuProfile != "" {
		f, err := os.Create(opts.cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	token, generated := opts.adminToken, false
	if token == "" {
		if token, err = randomToken(); err != nil {
			return err
		}
		generated = true
	}

	openFiles, err := openFilesLimit()
	if err != nil {
		return err
	}
	budget, err := planBudget(openFiles, opts.maxSKUs)
	if err != nil {
		return err
	}
	log.Info("file descriptor budget", "open_files_limit", budget.OpenFiles, "reserved", budget.Reserved,
		"max_skus", budget.MaxSKUs, "fds_per_sku", fdsPerSKU, "max_connections", budget.MaxConnections,
		"max_skus_from", maxSKUsSource(opts.maxSKUs))

	// Every check that can fail comes before anything is written to the
	// data dir: the campaign file parses and the address is bound, so a
	// refused start (the port in use) writes nothing, and the demo
	// campaign's window starts at a start that serves.
	var campaigns []httpapi.Campaign
	if opts.campaigns != "" {
		if campaigns, err = httpapi.LoadCampaigns(opts.campaigns); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", opts.addr)
	if err != nil {
		return err
	}
	served := false
	defer func() {
		if !served {
			ln.Close()
		}
	}()

	if opts.replica.enabled() { // a member of a replica set (hanode.go)
		served = true
		return serveReplica(opts, stdout, log, svcDeps{opts: opts, budget: budget, campaigns: campaigns, token: token, clock: time.Now}, ln, generated)
	}
	reg := newRegistry()
	svc, err := openService(svcDeps{opts: opts, budget: budget, campaigns: campaigns, token: token, reg: reg, log: log, clock: time.Now})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := svc.close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	srv, rt := svc.srv, svc.rt
	fmt.Fprintf(stdout, "seckilld listening on http://%s\n", ln.Addr())
	if rt != nil {
		rt.announce(rt.ledger, rt.id, "http://"+ln.Addr().String(), log)
	}
	printToken(stdout, token, generated)

	stop, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	done := make(chan error, 1)
	served = true // Serve closes ln
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("serving: %w", err)
	case <-stop.Done():
	}
	log.Info("shutting down: finishing requests in flight")
	ctx, cancelShutdown := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancelShutdown()
	if err := srv.Shutdown(ctx); err != nil {
		log.Warn("requests still in flight at the shutdown deadline", "err", err)
	}
	<-done
	return nil // the deferred engine.Close flushes and fsyncs every log
}

// printToken says which admin token the service takes.
func printToken(stdout io.Writer, token string, generated bool) {
	if generated {
		fmt.Fprintf(stdout, "admin token: %s\n", token)
	} else {
		fmt.Fprintln(stdout, "admin token: the one given by --admin-token / SECKILL_ADMIN_TOKEN")
	}
}

// newRegistry is a registry with the Go runtime's and the process's
// collectors.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// svcDeps is what openService needs.
type svcDeps struct {
	opts      options
	budget    fdBudget
	campaigns []httpapi.Campaign
	token     string
	reg       *prometheus.Registry
	log       *slog.Logger
	// clock is the one clock of every decision: the engine's, the HTTP
	// API's and the campaign file's (a lottery's redefinition is judged
	// on it).
	clock func() time.Time
	// replicate, when set, makes the engine's logs replicated (a
	// primary's stream sets actors.Config's replication).
	replicate func(*actors.Config)
	// pending is actors.Config.Pending: a replica set's list in etcd
	// while primary (hapending.go); nil, the data dir's files.
	pending actors.PendingStore
	// front is httpapi.Config.Front; replicaSet, httpapi.Config.ReplicaSet.
	front      func(next fasthttp.RequestHandler) fasthttp.RequestHandler
	replicaSet func() any
	// deferCampaigns leaves the campaigns, and the definitions a crash
	// cut short, to the caller (a replica's primary defines them while it
	// serves: with --sync-strict nothing commits until a standby is
	// waited for), who closes defined once they are
	// (httpapi.Config.Defined: not ready until then).
	deferCampaigns bool
	defined        <-chan struct{}
}

// service is what serves the API: the engine, for a cell its runtime,
// and the HTTP service over them, and the metrics they registered.
type service struct {
	engine  *actors.Engine
	rt      *cellRuntime
	srv     *httpapi.Server
	metrics *serviceMetrics
}

// openService opens the engine of d's data dir, starts a cell's runtime
// or defines the campaigns, and builds the HTTP service; it does not
// serve yet.
func openService(d svcDeps) (_ *service, err error) {
	opts, log := d.opts, d.log
	metrics := newServiceMetrics(d.reg)
	cfg := actors.Config{Clock: d.clock, DataDir: opts.dataDir, Fsync: opts.fsync, Logger: log, Registerer: metrics,
		SnapshotEvery: opts.snapshotEvery, SnapshotInterval: opts.snapshotInterval, SnapshotKeep: opts.snapshotKeep,
		MaxSKUs: d.budget.MaxSKUs, FeedRetainRecords: opts.feedRetainRecords, FeedRetainAge: opts.feedRetainAge,
		DrawBatch: opts.lotteryDrawBatch, DrawPause: opts.lotteryDrawPause, Pending: d.pending}
	if d.replicate != nil {
		d.replicate(&cfg)
	}
	engine, err := actors.Open(cfg)
	if err != nil {
		metrics.unregisterAll()
		return nil, fmt.Errorf("opening %s: %w%s", opts.dataDir, err, tooManyHint(err, d.budget))
	}
	svc := &service{engine: engine, metrics: metrics}
	defer func() {
		if err != nil {
			svc.close()
		}
	}()
	// What the HTTP API serves: the engine and its features, or for a cell
	// its guard of the engine, which also decides what the admin API may
	// define.
	var front httpapi.Engine = engine
	var claimer httpapi.CampaignClaimer
	var cellGuard httpapi.CellGuard
	var topUpPending func(campaignID, skuID string) bool
	if opts.cell.id != "" { // one cell of celled SKUs (cell.go)
		if !d.deferCampaigns {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			err := finishPending(ctx, engine, log)
			cancel()
			if err != nil {
				return nil, fmt.Errorf("%w%s", err, tooManyHint(err, d.budget))
			}
		}
		if svc.rt, err = startCell(engine, opts.cell, opts.dataDir, metrics, log); err != nil {
			return nil, err
		}
		front, claimer, cellGuard, topUpPending = svc.rt.guard, svc.rt.guard, svc.rt.guard, svc.rt.topUpPending
	} else if err := checkCellOf(engine, "", opts.dataDir); err != nil {
		return nil, err
	} else if !d.deferCampaigns {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := defineCampaigns(ctx, engine, opts.campaigns, d.campaigns, d.clock(), log)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("%w%s", err, tooManyHint(err, d.budget))
		}
	}
	svc.srv, err = httpapi.New(httpapi.Config{
		Clock:          d.clock,
		MaxConnections: d.budget.MaxConnections,
		Engine:         front,
		Feed:           feed.New(engine),
		Lotteries:      engine,
		Claimer:        claimer,
		CellGuard:      cellGuard,
		TopUpPending:   topUpPending,
		AdminToken:     d.token,
		PaymentSecret:  []byte(opts.paymentSecret),
		MaxQueueWait:   opts.maxQueueWait,
		Logger:         log,
		Registry:       d.reg,
		Registerer:     metrics,
		EntryPasses:    opts.entryPasses,
		FeedHeartbeat:  opts.feedHeartbeat,
		Front:          d.front,
		ReplicaSet:     d.replicaSet,
		Defined:        d.defined,
	})
	if err != nil {
		return nil, err
	}
	return svc, nil
}

// close stops a cell's runtime and closes the engine (every log flushed
// and fsynced), and takes the service's metrics out of the registry; the
// HTTP service was shut down before.
func (s *service) close() error {
	if s.rt != nil {
		s.rt.stop()
	}
	defer s.metrics.unregisterAll()
	if err := s.engine.Close(); err != nil {
		return fmt.Errorf("closing the engine: %w", err)
	}
	return nil
}

// finishPending completes the definitions of many SKUs (a campaign PUT)
// that a crash cut short (actors.Engine.FinishPending), before the
// campaign file: after a crash such a definition is whole or not begun.
func finishPending(ctx context.Context, e *actors.Engine, log *slog.Logger) error {
	finished, err := e.FinishPending(ctx)
	if len(finished) > 0 {
		log.Warn("finished the definitions a crash cut short", "skus", len(finished), "first", finished[0])
	}
	return err
}

// defineCampaigns finishes the definitions a crash cut short, then
// applies cs, read from the campaign file at path, or the demo campaign
// on the first start when there is no file.
func defineCampaigns(ctx context.Context, e *actors.Engine, path string, cs []httpapi.Campaign, now time.Time, log *slog.Logger) error {
	if err := finishPending(ctx, e, log); err != nil {
		return err
	}
	if path == "" {
		defined, err := httpapi.EnsureDemo(ctx, e, now)
		if defined && err == nil {
			log.Info("demo campaign defined", "campaign_id", httpapi.DemoCampaignID, "sku_id", httpapi.DemoSKUID)
		}
		return err
	}
	kept, err := httpapi.ApplyCampaignFile(ctx, e, cs, now)
	if err != nil {
		return fmt.Errorf("campaign file %s: %w", path, err)
	}
	if len(kept) > 0 {
		log.Info("SKUs extended since through the admin API keep their larger definition", "skus", kept)
	}
	log.Info("campaigns defined", "file", path, "campaigns", len(cs))
	return nil
}

func randomToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// maxSKUsSource says where the SKU limit came from, for the start log.
func maxSKUsSource(flagValue int) string {
	if flagValue == 0 {
		return "default: the open-files limit"
	}
	return "--max-skus"
}

// tooManyHint is what to do about an error wrapping actors.ErrTooManySKUs
// at start ("" for any other error): nothing was written.
func tooManyHint(err error, b fdBudget) string {
	if !errors.Is(err, actors.ErrTooManySKUs) {
		return ""
	}
	most := max((b.OpenFiles-fdsReserved-connectionsMin)/fdsPerSKU, 0)
	if b.MaxSKUs < most {
		return fmt.Sprintf(" (nothing was written; the limit is --max-skus / SECKILL_MAX_SKUS %d: raise it, to at most %d with the open-files limit of %d)",
			b.MaxSKUs, most, b.OpenFiles)
	}
	return fmt.Sprintf(" (nothing was written; the limit is --max-skus / SECKILL_MAX_SKUS %d, the most that the open-files limit of %d holds: "+
		"raise that limit (ulimit -n, systemd LimitNOFILE=) and --max-skus, or move SKUs to another engine)", b.MaxSKUs, b.OpenFiles)
}
