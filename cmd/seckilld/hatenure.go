package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/replica"
	"github.com/valyala/fasthttp"
)

// A replica's tenures and the role changes between them: a standby's (the
// HTTP server answering NOT_PRIMARY, the stream copying from the primary)
// and a primary's (the epoch taken, the engine opened on the SKU logs,
// the campaigns defined, the API served), each ended before the next
// begins.

// primaryTenure is one tenure as primary.
type primaryTenure struct {
	holding replica.Holding
	stream  primaryStream
	svc     *service
	served  chan error
	reg     *prometheus.Registry
	// campaigns is closed once the campaign definition ended (the
	// campaigns defined, or the tenure over); it is stopped with
	// stopCampaigns.
	campaigns     chan struct{}
	stopCampaigns context.CancelFunc
}

// standbyTenure is a time as standby or candidate: the HTTP server that
// answers NOT_PRIMARY, and the stream copying from the primary (nil while
// following none).
type standbyTenure struct {
	srv       *fasthttp.Server
	served    chan error
	reg       *prometheus.Registry
	stream    standbyStream
	following string
}

// follow copies from primary: its replication address from its member
// key.
func (n *haNode) follow(primary string) error {
	ms, err := n.members()
	if err != nil {
		return err
	}
	m, ok := ms[primary]
	if !ok {
		return fmt.Errorf("no member key of %s in etcd", primary)
	}
	t := n.standby
	if t.stream != nil {
		if err := t.stream.Close(); err != nil {
			n.log.Warn("closing the stream from the former primary", "primary", t.following, "err", err)
		}
		t.stream = nil
	}
	// A replica's lists are the set's (hapending.go); a file in its data
	// dir is a single node's, and the SKUs now come from the primary's
	// logs.
	if dropped, err := actors.DropPending(n.opts.dataDir); err != nil {
		return fmt.Errorf("dropping the definitions a crash cut short: %w", err)
	} else if dropped > 0 {
		n.log.Warn("dropped the definitions a crash of a single node on this data dir cut short: the primary holds the SKUs; repeat the campaign's PUT there", "files", dropped)
	}
	s, err := n.repl.NewStandby(standbyConfig{set: n.opts.replica.set, name: n.opts.replica.name, dataDir: n.opts.dataDir,
		primary: m.Replication, reg: t.reg, log: n.deps.log}) // the stream adds the set and replica labels
	if err != nil {
		return err
	}
	t.stream, t.following = s, primary
	n.log.Info("following the primary as a standby", "primary", primary, "replication", m.Replication)
	return nil
}

// promote makes this replica the primary of h: it stops copying, begins
// h's epoch in its logs, opens its stream and engine, and serves the API
// in place of NOT_PRIMARY. A failure leaves it unable to lead: the lease
// is given up (run returns, the deferred Close revokes it) so that
// another replica of the sync set takes over.
func (n *haNode) promote(h replica.Holding, waited []string) error {
	start := time.Now()
	if t := n.standby; t.stream != nil {
		if err := t.stream.Close(); err != nil {
			return fmt.Errorf("promotion: closing the standby's stream: %w", err)
		}
		t.stream, t.following = nil, ""
	}
	if err := n.repl.BeginEpoch(n.opts.dataDir, h.Epoch, n.log); err != nil {
		return fmt.Errorf("promotion to epoch %d: %w", h.Epoch, err)
	}
	reg := newRegistry()
	reg.MustRegister(n.collector())
	ps, err := n.repl.NewPrimary(primaryConfig{set: n.opts.replica.set, name: n.opts.replica.name, dataDir: n.opts.dataDir,
		epoch: h.Epoch, ln: n.replLn.Take(), strict: n.opts.replica.strict, reg: reg, log: n.deps.log}) // the stream adds the set and replica labels
	if err != nil {
		return fmt.Errorf("promotion: the replication stream: %w", err)
	}
	ps.Wait(waited)
	t := &primaryTenure{holding: h, stream: ps, served: make(chan error, 1), reg: reg}
	if err := n.openTenure(t); err != nil {
		ps.Close()
		return fmt.Errorf("promotion: %w", err)
	}
	svc := t.svc
	n.primary, n.epoch, n.lost = t, h.Epoch, n.coord.Lost(h)
	if err := n.stopStandbyHTTP(); err != nil {
		n.log.Warn("stopping the standby's HTTP server", "err", err)
	}
	go func() { t.served <- svc.srv.Serve(n.http.Take()) }()
	if svc.rt != nil { // a cell: its address for seckillctl audit is the primary's
		n.takeCellEpoch(svc.rt)
		svc.rt.announce(svc.rt.ledger, svc.rt.id, n.member.HTTP, n.log)
	}
	n.publishState()
	n.log.Info("promoted: serving as primary", "epoch", h.Epoch, "waiting_for", waited, "took", time.Since(start))
	return nil
}

// takeCellEpoch bumps the cell's ledger epoch as the promotion's last
// step, so that the former primary's top-ups and credits are fenced
// (ledger.ErrFenced) from this moment rather than from this primary's
// first ledger operation, which may come much later on a quiet SKU. A
// failure is logged: the agents take the epoch at their first ledger
// operation (cells.CellEpoch retries a failed bump).
func (n *haNode) takeCellEpoch(rt *cellRuntime) {
	ctx, cancel := n.call()
	defer cancel()
	e, err := rt.epoch.Take(ctx)
	if err != nil {
		n.log.Warn("taking the cell's ledger epoch at the promotion failed; the cell's agents take it at their first ledger operation", "cell", rt.id, "err", err)
		return
	}
	n.log.Info("took the cell's ledger epoch: the former primary's top-ups are fenced", "cell", rt.id, "ledger_epoch", e)
}

// demote stops acknowledging at once: the API answers NOT_PRIMARY from
// this moment (the front checks the state on every request); requests in
// flight end (a commit the standbys never acknowledge is answered 504
// RESULT_UNKNOWN at its deadline), the engine closes, then the stream, and
// the standby's HTTP server takes the address.
func (n *haNode) demote() error {
	t := n.primary
	if t == nil {
		return nil
	}
	n.primary, n.lost = nil, nil
	n.publishState()
	err := n.closeService(t)
	if cerr := t.stream.Close(); cerr != nil {
		n.log.Warn("closing the replication stream", "err", cerr)
	}
	if serr := n.startStandbyHTTP(); serr != nil {
		return serr
	}
	n.log.Warn("demoted: no longer primary", "epoch", t.holding.Epoch)
	return err
}

// openTenure opens t's engine and HTTP service over its stream, with
// the set's pending definitions in etcd, and finishes those and defines
// the campaigns in the background (retried until they commit or the
// tenure ends: with --sync-strict nothing commits before a standby is
// waited for, and the promotion must not wait for that); /readyz answers
// 503 "starting" until they are defined. The pending definitions are read
// before it serves, so that a campaign a failover cut short shows
// partly_defined until finished; a read that fails is left to the
// background's, which retries.
func (n *haNode) openTenure(t *primaryTenure) error {
	deps := n.deps
	deps.reg, deps.replicate, deps.front, deps.deferCampaigns = t.reg, t.stream.Replicate, n.front, true
	deps.pending = setPending{keys: n.coord, h: t.holding, timeout: n.opts.replica.leaseTTL}
	deps.replicaSet = func() any { return n.state.Load() }
	t.campaigns = make(chan struct{})
	n.campaigns.Store(&t.campaigns)
	deps.defined = t.campaigns
	svc, err := openService(deps)
	if err != nil {
		return err
	}
	lctx, lcancel := n.call()
	if err := svc.engine.LoadPending(lctx); err != nil {
		n.log.Warn("reading the replica set's pending definitions failed; retrying while serving", "err", err)
	}
	lcancel()
	t.svc, t.served = svc, make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	t.stopCampaigns = cancel
	go func() {
		defer close(t.campaigns)
		n.defineCampaigns(ctx, svc)
	}()
	return nil
}

// defineCampaigns finishes the definitions a crash cut short and applies
// the campaign file (or the demo campaign; a cell has neither) until it
// succeeds or ctx ends, retrying every second.
func (n *haNode) defineCampaigns(ctx context.Context, svc *service) {
	for {
		actx, cancel := context.WithTimeout(ctx, time.Minute)
		var err error
		if n.opts.cell.id != "" {
			err = finishPending(actx, svc.engine, n.log)
		} else {
			err = defineCampaigns(actx, svc.engine, n.opts.campaigns, n.deps.campaigns, n.deps.clock(), n.log)
		}
		cancel()
		if err == nil || ctx.Err() != nil {
			return
		}
		if definitionRefused(err) {
			select { // one is enough: the runner stops at the first
			case n.refused <- fmt.Errorf("the campaigns cannot be defined: %w%s", err, tooManyHint(err, n.deps.budget)):
			default:
			}
			return
		}
		n.log.Warn("defining the campaigns failed; retrying", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// definitionRefused reports whether err is the engine refusing a
// definition (a rule it breaks, or the SKU limit), which no retry cures,
// rather than a commit that did not complete.
func definitionRefused(err error) bool {
	return errors.Is(err, sku.ErrInvalidDefinition) || errors.Is(err, actors.ErrTooManySKUs)
}

// closeService shuts t's HTTP service down and closes its engine. A
// tenure whose service a switchover closed and could not open again has
// none: the replica then stops (run returns the error), and its shutdown
// must not wait for a server that never served.
func (n *haNode) closeService(t *primaryTenure) error {
	if t.svc == nil {
		return nil
	}
	t.stopCampaigns()
	<-t.campaigns
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := t.svc.srv.Shutdown(ctx); err != nil {
		n.log.Warn("requests still in flight at the shutdown deadline", "err", err)
	}
	<-t.served
	svc := t.svc
	t.svc = nil
	return svc.close()
}

// startStandbyHTTP serves NOT_PRIMARY, /healthz, /metrics and the
// replica's admin routes on the HTTP address.
func (n *haNode) startStandbyHTTP() error {
	reg := newRegistry()
	if err := reg.Register(n.collector()); err != nil {
		return err
	}
	t := &standbyTenure{reg: reg, served: make(chan error, 1)}
	if n.standby != nil { // the stream goes on across HTTP servers
		t.stream, t.following = n.standby.stream, n.standby.following
	}
	t.srv = &fasthttp.Server{Handler: n.front(n.standbyHandler(reg)), Name: "seckilld", NoDefaultServerHeader: true,
		ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second, IdleTimeout: time.Minute, CloseOnShutdown: true}
	n.standby = t
	ln := n.http.Take()
	go func() { t.served <- t.srv.Serve(ln) }()
	n.publishState()
	return nil
}

// stopStandbyHTTP stops the standby's HTTP server; its stream goes on.
func (n *haNode) stopStandbyHTTP() error {
	t := n.standby
	if t == nil || t.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err := t.srv.ShutdownWithContext(ctx)
	<-t.served
	t.srv = nil
	return err
}
