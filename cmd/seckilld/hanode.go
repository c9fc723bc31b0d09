package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/ledger"
	"github.com/seckill/seckill/replica"
)

// A member of a replica set runs replica.Node, the role loop, over etcd
// (replica.Etcd) and the replication stream (replicator): this file is
// the runner that performs the Node's actions. It registers the
// replica's addresses, reads the set's view every tick, follows the
// primary as a standby, takes the leader key when it is free and the sync
// key names it, and then serves as primary until its lease ends, when it
// demotes itself at once and follows the new primary. One HTTP address
// serves in every role (handoff): the API while primary, 421 NOT_PRIMARY
// otherwise (hahttp.go).

// replicator is the replication stream as the runner uses it (package
// replica/stream, adapted in hastream.go).
type replicator interface {
	// BeginEpoch raises the data dir's epoch to epoch before its engine
	// opens as primary of that epoch.
	BeginEpoch(dataDir string, epoch uint64, log *slog.Logger) error
	NewPrimary(c primaryConfig) (primaryStream, error)
	NewStandby(c standbyConfig) (standbyStream, error)
}

type primaryConfig struct {
	set, name, dataDir string
	epoch              uint64
	ln                 net.Listener // the replication address
	strict             bool
	reg                prometheus.Registerer
	log                *slog.Logger
}

type standbyConfig struct {
	set, name, dataDir string
	primary            string // the primary's replication address
	reg                prometheus.Registerer
	log                *slog.Logger
}

// primaryStream is a primary's side of the stream.
type primaryStream interface {
	// Replicate makes the engine's logs replicated by this stream.
	Replicate(cfg *actors.Config)
	// Wait sets the standbys every commit waits for.
	Wait(standbys []string)
	// Followers reports each standby the stream knows.
	Followers() []follower
	Close() error
}

// follower is a standby's status seen by its primary.
type follower struct {
	replica.Follower
	LagMillis int64
}

// standbyStream is a standby's side of the stream: it copies the
// primary's logs until Close.
type standbyStream interface {
	Status() standbyStatus
	// Reads is its state of the committed records it applied, which
	// answers status reads (nil: none).
	Reads() httpapi.StandbyReader
	Close() error
}

type standbyStatus struct {
	Epoch     uint64      `json:"epoch"`
	Connected bool        `json:"connected"`
	Records   uint64      `json:"records"`
	LastError string      `json:"last_error,omitempty"`
	SKUs      []copiedSKU `json:"skus,omitempty"`
}

// copiedSKU is a standby's copy of one SKU log: its last record, the
// primary's commit index it heard, and the index its reads reach.
type copiedSKU struct {
	CampaignID  string `json:"campaign_id"`
	SKUID       string `json:"sku_id"`
	LastIndex   uint64 `json:"last_index"`
	CommitIndex uint64 `json:"commit_index"`
	Applied     uint64 `json:"applied"`
}

// haState is what the HTTP handlers and metrics show of the replica,
// replaced as a whole by the runner.
type haState struct {
	Set         string          `json:"replica_set"`
	Name        string          `json:"replica"`
	Role        string          `json:"role"`
	Epoch       uint64          `json:"epoch"`
	Primary     string          `json:"primary,omitempty"`
	Address     string          `json:"address,omitempty"`
	Sync        []string        `json:"sync"`
	Waited      []string        `json:"waited"`
	Standbys    []standbyReport `json:"standbys,omitempty"`
	Copy        *standbyStatus  `json:"copy,omitempty"`
	Switchover  string          `json:"switchover,omitempty"`
	serving     bool            // the API is served (primary, engine open)
	primaryHTTP string          // Address, for NOT_PRIMARY
	// reads answers status reads of committed records while standby.
	reads httpapi.StandbyReader
}

type standbyReport struct {
	Name       string    `json:"name"`
	Connected  bool      `json:"connected"`
	CaughtUp   bool      `json:"caught_up"`
	LagRecords uint64    `json:"lag_records"`
	LagMillis  int64     `json:"lag_ms"`
	LastAck    time.Time `json:"last_ack"`
}

// haNode is one running replica.
type haNode struct {
	opts   options
	deps   svcDeps
	log    *slog.Logger
	coord  haCoordinator
	node   *replica.Node
	repl   replicator
	http   *handoff // the HTTP address
	replLn *handoff // the replication address
	member replica.Member
	tick   time.Duration

	state atomic.Pointer[haState]

	// Owned by the runner's goroutine.
	primary *primaryTenure
	standby *standbyTenure
	epoch   uint64
	addrs   map[string]replica.Member // the members last read
	lost    <-chan struct{}           // the holding's lease
	gone    <-chan struct{}           // the member key's lease
	// unregistered: the last registration failed (logged once).
	unregistered bool
	// nameTaken is when registrations began to find the replica's name
	// on another live lease (replica.ErrNameTaken); zero otherwise.
	nameTaken time.Time
	// switchTo is a switchover asked for (switchover.go); paused, while
	// it hands over, makes the API answer 503; switchNote is its last
	// outcome.
	switchTo   chan string
	paused     atomic.Bool
	switchNote atomic.Pointer[string]
	// refused carries a campaign file the engine refuses (definitionRefused)
	// to the runner, which stops the process with it: a retry cannot cure
	// it, and a primary that never gets ready must say why and exit.
	refused chan error
	// campaigns is the current primary tenure's campaigns channel
	// (primaryTenure.campaigns), for front: the buyers' API answers 503
	// until it is closed.
	campaigns atomic.Pointer[chan struct{}]
}

// haCoordinator is the Coordinator with the set's pending definitions
// (hapending.go), the replica's record (haseen.go) and the Close of its
// lease.
type haCoordinator interface {
	replica.Coordinator
	pendingKeys
	seenKeys
	Close() error
}

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

// serveReplica runs this process as a member of its replica set until
// SIGINT or SIGTERM.
func serveReplica(opts options, stdout io.Writer, log *slog.Logger, deps svcDeps, ln net.Listener, generated bool) error {
	client, err := ledger.Dial(strings.Split(opts.cell.etcd, ","))
	if err != nil {
		ln.Close()
		return err
	}
	defer client.Close()
	if err := checkSetIsNoCell(ledger.New(client, opts.cell.etcdPrefix), opts, log); err != nil {
		ln.Close()
		return err
	}
	coord, err := replica.NewEtcd(client, opts.cell.etcdPrefix, opts.replica.set, opts.replica.name, opts.replica.leaseTTL)
	if err != nil {
		ln.Close()
		return err
	}
	rln, err := net.Listen("tcp", opts.replica.replicationAddr)
	if err != nil {
		ln.Close()
		return fmt.Errorf("--replication-addr: %w", err)
	}
	n := newHANode(opts, deps, log, coord, newStreamReplicator(opts.fsync), ln, rln)
	fmt.Fprintf(stdout, "seckilld listening on http://%s (replica %s of replica set %s, replication on %s, advertised %s and %s)\n",
		ln.Addr(), opts.replica.name, opts.replica.set, rln.Addr(), n.member.HTTP, n.member.Replication)
	printToken(stdout, deps.token, generated)
	stop, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	return n.run(stop)
}

// checkSetIsNoCell refuses a replica started without --cell into a
// replica set that is a cell of the cluster (etcd holds an epoch for a
// cell of the set's name): it would join the cell's sync set and
// acknowledge its writes, yet could never lead, since a promotion without
// --cell refuses the cell's SKUs (checkCellOf); with two replicas, losing
// the primary would then leave the cell without one. An etcd that does
// not answer here is left to the promotion's check.
func checkSetIsNoCell(l *ledger.Ledger, opts options, log *slog.Logger) error {
	if opts.cell.id != "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	epoch, err := l.Epoch(ctx, opts.replica.set)
	switch {
	case err != nil:
		log.Warn("could not tell from etcd whether the replica set is a cell; a promotion without --cell still refuses a cell's SKUs", "replica_set", opts.replica.set, "err", err)
		return nil
	case epoch > 0:
		return fmt.Errorf("--replica-set %q is a cell of the cluster (etcd holds its epoch %d): start its replicas with --cell %s --etcd E, or name another replica set",
			opts.replica.set, epoch, opts.replica.set)
	}
	return nil
}

func newHANode(opts options, deps svcDeps, log *slog.Logger, coord haCoordinator, repl replicator, ln, rln net.Listener) *haNode {
	deps.log = log
	n := &haNode{opts: opts, deps: deps, log: log.With("replica_set", opts.replica.set, "replica", opts.replica.name),
		coord: coord, node: replica.NewNode(opts.replica.name, opts.replica.strict, opts.replica.standbyTimeout),
		repl: repl, http: newHandoff(ln), replLn: newHandoff(rln),
		member: advertised(opts.replica, ln.Addr(), rln.Addr()),
		tick:   max(opts.replica.leaseTTL/4, 100*time.Millisecond), switchTo: make(chan string, 1), refused: make(chan error, 1)}
	n.state.Store(&haState{Set: opts.replica.set, Name: opts.replica.name, Role: replica.Candidate.String()})
	return n
}

// advertised is the member key a replica publishes: the advertise
// addresses where given, the bound listen addresses otherwise.
func advertised(o replicaOptions, httpAddr, replAddr net.Addr) replica.Member {
	m := replica.Member{HTTP: "http://" + httpAddr.String(), Replication: replAddr.String()}
	if o.advertiseHTTP != "" {
		m.HTTP = "http://" + o.advertiseHTTP
	}
	if o.advertiseReplication != "" {
		m.Replication = o.advertiseReplication
	}
	return m
}

// run is the runner's loop, until ctx ends (then a primary hands over
// its key and everything closes) or a step fails in a way that leaves the
// replica unable to go on (the error).
func (n *haNode) run(ctx context.Context) (err error) {
	defer n.http.Close()
	defer n.replLn.Close()
	defer n.coord.Close()
	seenCtx, stopSeen := context.WithCancel(context.Background())
	seenDone := make(chan struct{})
	go func() {
		defer close(seenDone)
		n.keepSeen(seenCtx)
	}()
	defer func() { // before the lease closes: no write on a closed one
		stopSeen()
		<-seenDone
	}()
	if err := n.startStandbyHTTP(); err != nil {
		return err
	}
	defer func() {
		if cerr := n.shutdown(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	ticker := time.NewTicker(n.tick)
	defer ticker.Stop()
	if err := n.register(ctx); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			if n.gone == nil {
				if err := n.register(ctx); err != nil {
					return err
				}
			}
			if !n.nameTaken.IsZero() {
				continue // takes no role while another replica may hold its name
			}
			if err := n.perform(n.node.Tick(n.deps.clock(), n.followers())); err != nil {
				return err
			}
		case <-n.lost:
			if err := n.lose(); err != nil {
				return err
			}
		case <-n.gone:
			// The member key went with its lease: registered again at the
			// next tick. The leader key, on the same lease, went too.
			n.gone = nil
			select {
			case <-n.lost:
				if err := n.lose(); err != nil {
					return err
				}
			default:
			}
		case to := <-n.switchTo:
			if err := n.switchover(to); err != nil {
				return err
			}
		case err := <-n.refused:
			return err
		}
		n.publishState()
	}
}

// lose demotes the primary whose lease ended.
func (n *haNode) lose() error {
	n.log.Warn("the lease of the leader key ended: demoting at once", "epoch", n.node.Holding().Epoch)
	return n.perform(n.node.Lost(n.node.Holding()))
}

// nameWaitFloor is the least a replica waits for its name to be free
// (register): etcd grants no lease shorter than 1.5 of its election
// timeouts, whatever --lease-ttl asks.
const nameWaitFloor = 5 * time.Second

// register puts the member key (again) on the replica's lease; a failure
// is retried at the next tick, and logged once until it succeeds. A name
// another lease holds is waited for, the replica taking no role meanwhile:
// the key of this replica's own process before a kill -9 goes within a
// lease TTL; one still held after three (and nameWaitFloor) is another
// live replica started with the same --replica, and the error ends this
// one (two replicas of one name would stand for each other in the sync set
// and the router).
func (n *haNode) register(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, n.tick)
	defer cancel()
	gone, err := n.coord.Register(rctx, n.member)
	if errors.Is(err, replica.ErrNameTaken) {
		if n.nameTaken.IsZero() {
			n.nameTaken = time.Now()
			n.log.Warn("another live replica holds this replica's name in etcd; waiting a lease TTL for it to go (a process of this replica killed just before) before giving up", "err", err)
		}
		if time.Since(n.nameTaken) > max(3*n.opts.replica.leaseTTL, nameWaitFloor) {
			return fmt.Errorf("%w: give each replica of a set its own --replica name", err)
		}
		return nil
	}
	n.nameTaken = time.Time{}
	if err != nil {
		if !n.unregistered {
			n.log.Warn("registering the member key in etcd failed; retrying at every tick", "err", err)
		}
		n.unregistered = true
		return nil
	}
	if n.unregistered {
		n.log.Info("member key registered in etcd again")
	}
	n.gone, n.unregistered = gone, false
	return nil
}

// perform does actions in order, and those their results give.
func (n *haNode) perform(actions []replica.Action) error {
	for len(actions) > 0 {
		a := actions[0]
		actions = actions[1:]
		next, err := n.do(a)
		if err != nil {
			return err
		}
		actions = append(next, actions...)
	}
	return nil
}

// call bounds one coordinator call.
func (n *haNode) call() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), n.opts.replica.leaseTTL)
}

func (n *haNode) do(a replica.Action) ([]replica.Action, error) {
	switch a.Kind {
	case replica.ActRead:
		// A read is bounded by the tick: with etcd unreachable the loop
		// still turns and sees Lost on time.
		ctx, cancel := context.WithTimeout(context.Background(), n.tick)
		defer cancel()
		v, err := n.coord.Read(ctx)
		if err == nil {
			n.epoch = max(n.epoch, v.Sync.Epoch)
		}
		return n.node.Viewed(v, err), nil
	case replica.ActAcquire:
		ctx, cancel := n.call()
		defer cancel()
		h, err := n.coord.Acquire(ctx, a.View)
		if err != nil && !errors.Is(err, replica.ErrNotEligible) {
			n.log.Warn("taking the free leader key failed", "err", err)
		}
		return n.node.Acquired(n.deps.clock(), h, err), nil
	case replica.ActPromote:
		return nil, n.promote(a.Holding, a.Standbys)
	case replica.ActDemote:
		return nil, n.demote()
	case replica.ActWait:
		n.primary.stream.Wait(a.Standbys)
		n.log.Info("commits wait for", "standbys", a.Standbys)
		return nil, nil
	case replica.ActSetSync:
		ctx, cancel := n.call()
		defer cancel()
		_, err := n.coord.SetSync(ctx, a.Holding, a.Standbys)
		if err != nil {
			n.log.Warn("publishing the sync set failed", "sync", a.Standbys, "err", err)
		} else {
			n.log.Info("sync set published", "sync", a.Standbys, "epoch", a.Holding.Epoch)
		}
		return n.node.Published(err), nil
	case replica.ActFollow:
		if err := n.follow(a.Primary); err != nil {
			n.log.Warn("cannot follow the primary yet", "primary", a.Primary, "err", err)
			n.node.FollowFailed()
		}
		return nil, nil
	}
	return nil, fmt.Errorf("replica: unknown action %v", a.Kind)
}

// members reads the member keys.
func (n *haNode) members() (map[string]replica.Member, error) {
	ctx, cancel := n.call()
	defer cancel()
	ms, err := n.coord.Members(ctx)
	if err == nil {
		n.addrs = ms
	}
	return ms, err
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

// closeService shuts t's HTTP service down and closes its engine.
func (n *haNode) closeService(t *primaryTenure) error {
	t.stopCampaigns()
	<-t.campaigns
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := t.svc.srv.Shutdown(ctx); err != nil {
		n.log.Warn("requests still in flight at the shutdown deadline", "err", err)
	}
	<-t.served
	return t.svc.close()
}

// shutdown ends the process's part: a primary stops serving, closes its
// engine and hands the leader key over (released with the sync key as it
// is: a standby of the sync set takes it at once instead of a TTL later);
// a standby stops copying.
func (n *haNode) shutdown() error {
	var err error
	if t := n.primary; t != nil {
		n.primary = nil
		n.publishState()
		err = n.closeService(t)
		if cerr := t.stream.Close(); cerr != nil && err == nil {
			err = cerr
		}
		rctx, rcancel := n.call()
		if rerr := n.coord.Release(rctx, t.holding, nil); rerr != nil {
			n.log.Warn("releasing the leader key failed; it goes with the lease", "err", rerr)
		}
		rcancel()
	}
	if t := n.standby; t != nil {
		if t.stream != nil {
			if cerr := t.stream.Close(); cerr != nil && err == nil {
				err = cerr
			}
		}
		if serr := n.stopStandbyHTTP(); serr != nil && err == nil {
			err = serr
		}
	}
	return err
}

// followers is the primary's stream's report (nil otherwise).
func (n *haNode) followers() []replica.Follower {
	if n.primary == nil {
		return nil
	}
	var out []replica.Follower
	for _, f := range n.primary.stream.Followers() {
		out = append(out, f.Follower)
	}
	return out
}

// publishState replaces the state the handlers show.
func (n *haNode) publishState() {
	prev := n.state.Load()
	s := &haState{Set: prev.Set, Name: prev.Name, Role: n.node.Role().String(), Epoch: n.epoch}
	if note := n.switchNote.Load(); note != nil {
		s.Switchover = *note
	}
	switch {
	case n.primary != nil:
		s.Role, s.Primary, s.Address, s.serving = replica.Primary.String(), s.Name, n.member.HTTP, true
		s.Sync, s.Waited = n.node.SyncSet(), n.node.Waited()
		for _, f := range n.primary.stream.Followers() {
			s.Standbys = append(s.Standbys, standbyReport{Name: f.Name, Connected: f.Connected, CaughtUp: f.CaughtUp,
				LagRecords: f.LagRecords, LagMillis: f.LagMillis, LastAck: f.LastAck})
		}
		slices.SortFunc(s.Standbys, func(a, b standbyReport) int { return strings.Compare(a.Name, b.Name) })
	case n.node.Role() == replica.Primary:
		s.Role = replica.Candidate.String() // promoting: not serving yet
	case n.standby != nil && n.standby.following != "":
		s.Primary = n.standby.following
		s.Address = n.addrs[s.Primary].HTTP
		if n.standby.stream != nil {
			st := n.standby.stream.Status()
			s.Copy = &st
			s.reads = n.standby.stream.Reads()
		}
	}
	if s.Sync == nil {
		s.Sync = []string{}
	}
	if s.Waited == nil {
		s.Waited = []string{}
	}
	s.primaryHTTP = s.Address
	n.state.Store(s)
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
