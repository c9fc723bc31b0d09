package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill/actors"
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
// demotes itself at once and follows the new primary (the tenures and
// the changes between them: hatenure.go; what it shows: hastate.go). One
// HTTP address serves in every role (handoff): the API while primary, 421
// NOT_PRIMARY otherwise (hahttp.go).

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
		// A lease that ended comes first: the select below picks at random
		// among the cases ready, and a tick taken first would act as
		// primary once more (its calls cut short by bounded, its
		// decisions not).
		select {
		case <-n.lost:
			if err := n.lose(); err != nil {
				return err
			}
			n.publishState()
			continue
		default:
		}
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
	return n.bounded(n.opts.replica.leaseTTL)
}

// bounded is the context of a coordinator call of at most d that, while
// this replica leads, also ends with its lease: a call blocked on an etcd
// the primary cannot reach (a partition) would otherwise hold the runner,
// and with it the demotion Lost asks for, up to d after the lease ended,
// while the new primary may already serve.
func (n *haNode) bounded(d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	if lost := n.lost; lost != nil {
		go func() {
			select {
			case <-lost:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return ctx, cancel
}

func (n *haNode) do(a replica.Action) ([]replica.Action, error) {
	switch a.Kind {
	case replica.ActRead:
		// A read is bounded by the tick (and the lease): with etcd
		// unreachable the loop still turns and sees Lost on time.
		ctx, cancel := n.bounded(n.tick)
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
