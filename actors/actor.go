package actors

import (
	"errors"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/shell"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/snapshot"
	"github.com/seckill/seckill/wal"
)

// tick asks the actor to run its timers at now (expiry, snapshot, a due
// recovery). Engine.Tick sends one at a time (SKU.tickPending).
type tick struct{ now time.Time }

// logFailure tells the actor that a log failed under a batch waiting on
// it (the flusher's write or fsync failed): if it is the log the shell
// runs, the SKU stops at once, rather than at its next append, and its
// backoff counts from at, when the first batch learned it.
type logFailure struct{ at time.Time }

// skuActor hosts one SKU's shell (package actors/shell), which holds
// everything between the SKU's core and its files: appending, group
// commit's waiters, snapshots, truncation, recovery, the draw's timers,
// audits and their cool-down.
// The actor only turns messages into the shell's inputs, with the engine's
// clock: calls taken from the SKU's inbox in batches (inbox.go), ticks,
// snapshot and audit requests, the jobs its executor ran (executor.go)
// and log failures. As the shell's Host it publishes what the ingress reads
// without a message (the durable view, the request filter, the figures)
// and wakes the callers. It keeps no state that the log cannot rebuild:
// on Started (first start, or after a supervisor restart caused by a
// panic) a new shell rebuilds the SKU from disk.
type skuActor struct {
	h     *SKU
	cfg   *Config
	shell *shell.Shell
	exec  *executor // this incarnation's

	// filter holds the decided request_ids, published as h.requests.
	filter *requestFilter

	spare []*call // handed to the inbox in exchange for its calls

	// ctx is this incarnation's actor context, from Started on: a drain a
	// caller runs (callerDrain) uses it as Receive's would.
	ctx actor.Context
}

// newShell returns the shell of a new actor incarnation.
func (a *skuActor) newShell(ctx actor.Context) *shell.Shell {
	c := a.cfg
	a.exec = &executor{root: ctx.ActorSystem().Root, pid: ctx.Self()}
	return shell.New(shell.Config{
		CampaignID: a.h.campaignID,
		SKUID:      a.h.skuID,
		Core: core.Config{
			Rand:               c.Rand,
			ExpiryBatch:        c.ExpiryBatch,
			DrawBatch:          c.DrawBatch,
			SnapshotEvery:      c.snapshotEvery(),
			SnapshotInterval:   c.snapshotInterval(),
			SnapshotRetryAfter: snapshotRetryAfter,
			LogFailureRetry:    c.LogFailureRetry,
			OnRecorded: func(requestID string) {
				if a.filter != nil {
					a.filter.add(requestID)
				}
			},
		},
		OpenLog: a.openLog,
		Snapshots: skuSnapshots{
			Files: snapshot.Files{Dir: snapshot.Dir(a.h.dir.Snapshots()), CampaignID: a.h.campaignID, SKUID: a.h.skuID,
				Options: snapshot.Options{NoSync: c.Fsync == wal.FsyncNeverBenchmarkOnly}},
			writers: c.snapshotWriters,
		},
		Executor:          a.exec,
		Host:              a,
		SnapshotKeep:      c.snapshotKeep(),
		FeedRetainRecords: c.FeedRetainRecords,
		FeedRetainAge:     c.FeedRetainAge,
		DrawPause:         c.DrawPause,
		Truncations:       c.truncations,
		RetainFrom:        a.retainFrom(),
		RecoverySlot:      c.recoverySlot,
		Logger:            c.Logger,
		Stopwatch:         monoNow,
		Recount:           func(f *sku.Frozen) sku.Audit { return recount(f) },
	})
}

// retainFrom is the shell's hold on truncation for the standbys (nil
// without replication).
func (a *skuActor) retainFrom() func() uint64 {
	r := a.cfg.Replication
	if r == nil {
		return nil
	}
	campaignID, skuID := a.h.campaignID, a.h.skuID
	return func() uint64 { return r.RetainFrom(campaignID, skuID) }
}

// openLog opens the SKU's log and publishes it (SKU.log: the feed and the
// figures read it).
func (a *skuActor) openLog() (*wal.Log, error) {
	a.h.log.Store(nil)
	log, err := wal.Open(a.h.dir.WAL(), a.h.walOptions(a.cfg))
	if err != nil {
		return nil, err
	}
	if r := a.cfg.Replication; r != nil {
		if err := r.Opened(a.h.campaignID, a.h.skuID, a.h.dir, log); err != nil {
			log.Close()
			return nil, err
		}
	}
	a.h.log.Store(log)
	return log, nil
}

// Receive implements actor.Actor.
func (a *skuActor) Receive(ctx actor.Context) {
	if counted(ctx.Message()) {
		a.h.mailbox.Add(-1) // taken (mailbox.go)
	}
	switch msg := ctx.Message().(type) {
	case drain:
		a.drain(ctx)
	case tick:
		a.h.tickPending.Store(false)
		a.shell.Tick(msg.now)
	case jobDone:
		a.shell.Done(a.cfg.Clock(), msg.job)
	case opsPosted:
		snapshots, audits := a.h.takeOps()
		now := a.cfg.Clock()
		for _, r := range snapshots {
			a.shell.RequestSnapshot(now, r)
		}
		for _, c := range audits {
			a.shell.Audit(now, c)
		}
	case logFailure:
		a.h.failPending.Store(false)
		if log := a.shell.Log(); log != nil {
			if err := log.Err(); err != nil { // a failure is sticky: the log the shell runs failed
				a.shell.LogFailed(msg.at, log, err)
			}
		}
	case *actor.Started:
		a.ctx = ctx
		a.shell = a.newShell(ctx)
		if err := a.h.syncFailed.Load(); err != nil {
			a.shell.FailStop(a.cfg.Clock(), *err)
		} else {
			a.shell.Recover(a.cfg.Clock())
		}
		a.h.incarnation.Store(a)
	case *actor.Restarting:
		a.h.incarnation.CompareAndSwap(a, nil)
		a.stop()
	case *actor.Stopping:
		a.h.incarnation.CompareAndSwap(a, nil)
		a.h.shut()
		a.stop()
	case *actor.Stopped:
		a.h.box.stop()
	}
}

// stop ends this incarnation's shell, then waits for its snapshot writers
// (they never wait on the actor) and keeps its executor from messaging
// the actor again.
func (a *skuActor) stop() {
	a.shell.Stop()
	a.exec.stop()
}

// callerDrain is Receive of a drain message that a caller runs on its own
// goroutine (pinnedMailbox.postAndRun), handed to the actor directly
// rather than through protoactor's context: that path only finds, by a
// type switch on the message and another in Receive, that a drain is a
// drain (callgrind, one reserve at a time: about 250 instructions). The
// mailbox's rules for such a run (no system message waiting, not
// suspended, one run at a time) are what protoactor's would check; its
// panic goes to the supervisor as any other's (pinnedMailbox.invoke).
func (a *skuActor) callerDrain(queued bool) {
	if queued {
		a.h.mailbox.Add(-1) // taken (mailbox.go)
	}
	a.drain(a.ctx)
}

// drain takes the waiting calls from the inbox, has the shell decide them
// one at a time and commits the round: a reply that rests on earlier, not
// yet durable records (a SOLD_OUT, a duplicate, a read) waits for them too.
func (a *skuActor) drain(ctx actor.Context) {
	calls, items, more := a.h.in.take(a.spare)
	if more {
		ctx.Send(ctx.Self(), drain{}) // before deciding: a panic must not strand the rest
	}
	if len(calls) > 0 {
		a.h.taken(calls[len(calls)-1].enqueuedAt, items)
	}
	now := a.cfg.Clock()
	defined := a.decideAll(ctx, now, calls)
	clear(calls)
	a.spare = calls[:0]
	a.shell.Commit(now)
	if defined {
		a.sizeFilter()
	}
}

// decideAll has the shell decide calls in order at one clock reading, now
// (their records carry it). It reports whether one was a definition.
func (a *skuActor) decideAll(ctx actor.Context, now time.Time, calls []*call) (defined bool) {
	next := 0 // calls[next:] are not decided yet
	defer func() {
		if r := recover(); r != nil {
			a.contain(ctx, now, calls[min(next, len(calls)):])
			panic(r) // protoactor's supervisor restarts the actor
		}
	}()
	// One more clock reading per call times it for the metrics.
	start := monoNow()
	for _, c := range calls {
		next++
		kind := c.Kind // c is its caller's again once answered
		a.shell.Decide(now, &c.Call)
		a.h.activity.decided(kind, &c.Call)
		defined = defined || kind == core.KindDefine
		end := monoNow() // the monotonic clock alone: half the cost of time.Now
		a.cfg.metrics.observeCall(kind, time.Duration(end-start))
		start = end
	}
	return defined
}

// contain keeps a panic while deciding one call (a programming error) from
// stranding the rest of its batch: the calls the core decided before it
// are committed as usual (their records appended, their replies released
// once durable), those after it go back to the front of the inbox for the
// restarted actor. The panicking call is committed with the decided ones
// if the panic came after the core decided it (in the metrics); otherwise
// it is never answered and its caller's context ends it (result unknown).
func (a *skuActor) contain(ctx actor.Context, now time.Time, undecided []*call) {
	a.shell.Commit(now) // a failed SKU has nothing to append: its answers go out
	if a.h.in.requeue(undecided) {
		ctx.Send(ctx.Self(), drain{})
	}
}

// sizeFilter builds the request filter from the SKU's decided
// request_ids when it has none (at recovery) or holds none yet (a first
// definition sizes its first stage, core.RequestCapacity); from then on
// it grows as ids are added (requestFilter.add).
func (a *skuActor) sizeFilter() {
	if a.filter != nil && !a.filter.empty() {
		return
	}
	c := a.shell.Core()
	f := newRequestFilter(c.RequestCapacity())
	c.Machine().EachRequestID(f.add)
	a.filter = f
	a.h.requests.Store(f)
}

// The shell's Host (package actors/shell).

// Appending implements shell.Host: the actor has nothing to do before an
// append.
func (a *skuActor) Appending(*sku.Machine, uint64, []sku.Record) {}

// Answer implements shell.Host: it wakes each caller.
func (a *skuActor) Answer(calls []*core.Call) {
	for _, c := range calls {
		wake(c)
	}
}

// Release implements shell.Host, on the goroutine that releases the log's waiters: once the
// batch is durable it publishes the SKU's durable view and hands the
// campaign's purchase registry its events, before any caller wakes; a
// failure of the log goes to the actor.
func (a *skuActor) Release(r *shell.Release) {
	switch {
	case r.Durable:
		a.h.publish(r.View)
		a.h.applyPurchaseEvents(r.Events)
	case r.Failure != nil:
		a.h.logFailed(a.cfg.Clock())
	}
	for _, c := range r.Calls {
		wake(c)
	}
}

// Ticked implements shell.Host: the figures of an expiry step.
func (a *skuActor) Ticked(expired int, nextExpiry int64) {
	a.h.nextExpiry.Store(nextExpiry)
	if expired > 0 {
		a.cfg.metrics.expiries.Add(float64(expired))
		a.h.activity.expired.Add(uint64(expired))
	}
}

// Recovered implements shell.Host: a recovered SKU publishes its state
// and takes calls; the first recovery, done or not, wakes Open.
func (a *skuActor) Recovered(r *shell.Recovery) {
	if r.Err != nil {
		a.h.recovered(r.Err)
		return
	}
	if r.Plan.Base.Path != "" {
		a.h.activity.snapshotLoaded(r.Plan.Base.Path, r.Plan.Base.Index)
	}
	a.h.resyncPurchases(r.Machine)
	a.filter = nil
	a.sizeFilter()
	a.h.nextExpiry.Store(0) // the first tick looks for due expiries
	a.h.publish(r.View)
	a.h.unavailable.Store(false)
	a.h.recovered(nil)
}

// Failed implements shell.Host: the SKU answers ErrUnavailable.
func (a *skuActor) Failed(err error) {
	a.h.unavailable.Store(true)
	if errors.Is(err, wal.ErrSyncFailed) {
		a.h.syncFailed.CompareAndSwap(nil, &err)
	}
}

// SnapshotWritten implements shell.Host, on the snapshot's goroutine.
func (a *skuActor) SnapshotWritten(info shell.SnapshotInfo) {
	a.h.activity.snapshotWritten(a.cfg.Clock(), info.Index)
	if r := a.cfg.Replication; r != nil {
		r.SnapshotWritten(a.h.campaignID, a.h.skuID, info.Index)
	}
}

// SnapshotDone implements shell.Host.
func (a *skuActor) SnapshotDone(info shell.SnapshotInfo, err error) {
	a.cfg.metrics.observeSnapshot(info, err)
}

// skuSnapshots is a SKU's snapshot folder whose writes count against the
// engine's file descriptor budget: each waits for one of its
// SnapshotWritersMax slots (on the snapshot's goroutine).
type skuSnapshots struct {
	snapshot.Files
	writers slots
}

func (s skuSnapshots) Write(f *sku.Frozen, index uint64) (snapshot.Info, error) {
	defer s.writers.acquire()()
	return s.Files.Write(f, index)
}

func (s skuSnapshots) Prune(keep int) (uint64, error) {
	defer s.writers.acquire()()
	return s.Files.Prune(keep)
}
