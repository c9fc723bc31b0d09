package actors

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/purchase"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/recovery"
	"github.com/seckill/seckill/wal"
)

// tick asks the actor to run its timers at now (expiry, snapshot, a due
// recovery). Engine.Tick sends one at a time (SKU.tickPending); the actor
// sends itself one more (more) while reservations are due.
type tick struct {
	now  time.Time
	more bool
}

// logFailure tells the actor that its log failed under a batch waiting
// on it (the flusher's write or fsync failed): the SKU stops at once,
// rather than at its next append, and its backoff counts from now.
type logFailure struct {
	log *wal.Log  // the log that failed: a later incarnation's is not
	at  time.Time // when the waiter learned it
	err error
}

// logFailed reports a failure of log to the actor (from the log's
// releaser goroutine; it does not block). Closing is no failure.
func (s *SKU) logFailed(log *wal.Log, err error) {
	if !errors.Is(err, wal.ErrClosed) {
		s.engine.system.Root.Send(s.pid, logFailure{log: log, at: s.engine.cfg.Clock(), err: err})
	}
}

// skuActor is the protoactor shell around one SKU's core (package
// actors/core), which decides. The shell does what the core may not: it
// takes calls in batches from the SKU's inbox (inbox.go), appends the
// records the core returns to the SKU's log, and hands the replies to the
// log, which releases them once every record they rest on is fsynced
// (group commit: the next batch forms while the current one syncs). It
// also opens logs, recovers, writes snapshots and contains panics. It keeps
// no state that the log cannot rebuild: on Started (first start, or after a
// supervisor restart caused by a panic) it rebuilds the SKU from disk.
type skuActor struct {
	h          *SKU
	cfg        *Config
	dispatcher *pinnedDispatcher // runs this actor; stopped with it
	core       *core.Core
	log        *wal.Log
	// m is the Machine being rebuilt during a recovery (restoreSnapshot
	// loads it), handed to the core once replayed; nil otherwise.
	m *sku.Machine
	// failed mirrors core.Failed() after each input: set while the SKU
	// answers ErrUnavailable (fail-stop) until it recovers.
	failed error

	// filter holds the decided request_ids, published as h.requests.
	filter *requestFilter

	snap snapshots // snapshot writers and their callers (snapshot.go)

	retain feed.Retention // holds truncation back for feed consumers

	drawPaused bool // a draw's next round waits for Config.DrawPause (lottery.go)

	buf   []byte  // payload scratch, reused
	spare []*call // handed to the inbox in exchange for its calls
}

// newCore returns the core of a new actor incarnation.
func (a *skuActor) newCore() *core.Core {
	c := a.cfg
	return core.New(core.Config{
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
	})
}

// Receive implements actor.Actor.
func (a *skuActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case drain:
		a.drain(ctx)
	case tick:
		if !msg.more {
			a.h.tickPending.Store(false)
		}
		a.tick(ctx, msg.now)
	case snapshotMessage:
		a.onSnapshot(ctx, msg)
	case rankedMessage:
		a.onRanked(ctx, msg)
	case drawResume:
		a.drawPaused = false
		a.tick(ctx, a.cfg.Clock())
	case logFailure:
		if msg.log == a.log && a.log != nil {
			a.failAt(msg.at, msg.err)
		}
	case *actor.Started:
		a.core = a.newCore()
		a.recover()
	case *actor.Restarting:
		a.stopSnapshots()
		a.closeLog()
	case *actor.Stopping:
		a.h.shut()
		a.stopSnapshots()
		a.closeLog()
	case *actor.Stopped:
		a.dispatcher.stop()
	}
}

// recover opens the log, rebuilds the state from the newest usable
// snapshot and the records after it (restoreState, recovery.go) and hands
// the result to the core. A failed recovery leaves the SKU unavailable;
// the core schedules another.
func (a *skuActor) recover() {
	a.h.unavailable.Store(true)
	a.m = sku.New()
	start := time.Now()
	log, err := wal.Open(filepath.Join(a.h.dir, "wal"), a.h.walOptions(a.cfg))
	if err == nil {
		a.log = log
		a.h.log.Store(log)
		err = a.restoreState()
	}
	m := a.m
	a.m = nil
	if err != nil {
		a.core.RecoveryFailed(a.cfg.Clock(), fmt.Errorf("%s/%s: %w", a.h.campaignID, a.h.skuID, err))
		a.failed = a.core.Failed()
		retry, armed := a.core.RetryAt()
		a.cfg.Logger.Error("SKU recovery failed; it answers UNAVAILABLE", "campaign", a.h.campaignID, "sku", a.h.skuID,
			"err", err, "retry", armed, "retry_at", retry)
		a.h.recovered(a.failed)
		return
	}
	a.core.Recovered(a.cfg.Clock(), m, a.log.LastIndex(), a.snap.index)
	a.h.resyncPurchases(m)
	a.failed = nil
	a.sizeFilter()
	a.h.nextExpiry.Store(0) // the first tick looks for due expiries
	a.h.publish(a.view())
	a.h.unavailable.Store(false)
	a.cfg.Logger.Info("SKU recovered", "campaign", a.h.campaignID, "sku", a.h.skuID,
		"records", a.log.LastIndex(), "reservations", m.Counts().Reservations, "took", time.Since(start))
	a.h.recovered(nil)
}

// recoverAgain rebuilds a failed SKU from disk when its core says a
// recovery is due (after a log failure or a failed recovery).
func (a *skuActor) recoverAgain() {
	defer a.cfg.recoverySlot()() // RecoveriesMax at once (engine.go)
	a.cfg.Logger.Info("SKU recovering from disk after a failure", "campaign", a.h.campaignID, "sku", a.h.skuID,
		"cause", a.failed)
	a.stopSnapshots()
	a.closeLog()
	a.h.log.Store(nil)
	a.filter = nil
	a.recover()
}

// replayFrom applies the records from index from on to a.m.
func (a *skuActor) replayFrom(from uint64) error {
	_, err := recovery.Replay(a.log, a.m, from)
	return err
}

func (a *skuActor) closeLog() {
	if a.log != nil {
		if err := a.log.Close(); err != nil {
			a.cfg.Logger.Error("closing SKU log", "campaign", a.h.campaignID, "sku", a.h.skuID, "err", err)
		}
		a.log = nil
	}
}

func (a *skuActor) view() durableView {
	m := a.core.Machine()
	return durableView{def: m.Definition(), counts: m.Counts(), paused: m.Paused(), drawing: m.DrawPending()}
}

// noteDurable tells the core how far the log is durable (the end of a
// backoff after a recovery). One load and one comparison.
func (a *skuActor) noteDurable() {
	if a.log != nil {
		a.core.Durable(a.log.DurableIndex())
	}
}

// drain takes the waiting calls from the inbox, has the core decide them
// one at a time, and commits the round: a reply that rests on earlier, not
// yet durable records (a SOLD_OUT, a duplicate, a read) waits for them too.
func (a *skuActor) drain(ctx actor.Context) {
	a.noteDurable()
	calls, items, more := a.h.in.take(a.spare)
	if more {
		ctx.Send(ctx.Self(), drain{}) // before deciding: a panic must not strand the rest
	}
	if len(calls) > 0 {
		a.h.taken(calls[len(calls)-1].enqueuedAt, items)
	}
	defined := a.decideAll(ctx, calls)
	clear(calls)
	a.spare = calls[:0]
	a.commit(ctx)
	if defined {
		a.sizeFilter()
	}
}

// decideAll has the core decide calls in order at one clock reading (their
// records carry it). It reports whether one was a definition.
func (a *skuActor) decideAll(ctx actor.Context, calls []*call) (defined bool) {
	next := 0 // calls[next:] are not decided yet
	defer func() {
		if r := recover(); r != nil {
			a.contain(ctx, calls[min(next, len(calls)):])
			panic(r) // protoactor's supervisor restarts the actor
		}
	}()
	// One more clock reading per call times it for the metrics.
	now, start := a.cfg.Clock(), monoNow()
	for _, c := range calls {
		next++
		kind := c.Kind // c is its caller's again once answered
		a.core.Decide(now, &c.Call)
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
func (a *skuActor) contain(ctx actor.Context, undecided []*call) {
	a.commit(ctx) // a failed SKU has nothing to append: its answers go out
	if a.h.in.requeue(undecided) {
		ctx.Send(ctx.Self(), drain{})
	}
}

// commit ends the core's round: it appends the round's records to the log
// (without waiting for the disk), tells the core how far it got, and does
// what the core asks: answer calls now, hand the others to the log as one
// batch, publish the state expiry made once durable, start a snapshot,
// recover.
func (a *skuActor) commit(ctx actor.Context) *core.Actions {
	rd := a.core.Ready()
	appended, err := a.appendRecords(rd.Records)
	events := purchase.Events(a.core.Machine(), rd.Records[:appended])
	start := monoNow()
	act := a.core.Advance(appended, err)
	pause := time.Duration(monoNow() - start)
	if err != nil {
		a.noteFailure(err)
	}
	for _, c := range act.Answer {
		wake(c)
	}
	if w := act.Wait; w != nil {
		if len(w.Calls) == 0 {
			a.log.Await(w.Index, &publisher{owner: a.h, view: a.view(), events: events})
		} else {
			b := batchPool.Get().(*batch)
			b.calls = append(b.calls[:0], w.Calls...)
			b.owner, b.view, b.log, b.events = a.h, a.view(), a.log, events
			a.log.Await(w.Index, b) // the calls belong to their callers again from here on
		}
	}
	if act.Snapshot != nil {
		a.startSnapshot(ctx, act.Snapshot, pause)
	}
	a.lotteryActions(ctx, act)
	if act.Recover {
		a.recoverAgain()
	}
	return act
}

// appendRecords hands the records to the log's pending batch; it does not
// wait for the disk. It returns how many it handed over, and the error
// that stopped it (the log failed).
func (a *skuActor) appendRecords(records []sku.Record) (appended int, err error) {
	for i := range records {
		a.buf = records[i].AppendPayload(a.buf[:0])
		if _, err := a.log.Append(byte(records[i].Type), a.buf); err != nil {
			return i, err
		}
	}
	return len(records), nil
}

// fail reports a log failure seen outside a round (a failed truncation,
// a batch whose write or fsync failed): the SKU becomes fail-stop like
// after a failed append. A SKU failed already stays as it is.
func (a *skuActor) fail(err error) { a.failAt(a.cfg.Clock(), err) }

// failAt is fail for a failure that happened at now.
func (a *skuActor) failAt(now time.Time, err error) {
	if a.failed != nil {
		return
	}
	a.core.LogFailed(now, err)
	a.noteFailure(err)
}

// noteFailure publishes that the core failed the SKU (fail-stop: the
// Machine may hold decisions that are not on disk) and says in the log
// whether it heals by itself.
func (a *skuActor) noteFailure(cause error) {
	failed := a.core.Failed()
	if failed == nil || a.failed != nil {
		a.failed = failed
		return
	}
	a.failed = failed
	a.h.unavailable.Store(true)
	if at, armed := a.core.RetryAt(); armed {
		a.cfg.Logger.Error("SKU log failed; fail-stop until it recovers from disk", "campaign", a.h.campaignID, "sku", a.h.skuID,
			"err", cause, "retry_at", at)
		return
	}
	// After a failed fsync the page cache may hold records the disk lost:
	// the core never rebuilds from the file in place (wal.ErrSyncFailed).
	a.cfg.Logger.Error("SKU log failed; fail-stop until the process restarts (check the disk first)",
		"campaign", a.h.campaignID, "sku", a.h.skuID, "err", cause)
}

// tick runs the core's timers at now: one bounded expiry step (another is
// asked for while more reservations are due), a due snapshot, a due
// recovery.
func (a *skuActor) tick(ctx actor.Context, now time.Time) {
	a.noteDurable()
	a.core.Tick(now)
	act := a.commit(ctx)
	if !act.Ticked {
		return
	}
	a.h.nextExpiry.Store(act.NextExpiry)
	if act.Expired > 0 {
		a.cfg.metrics.expiries.Add(float64(act.Expired))
		a.h.activity.expired.Add(uint64(act.Expired))
	}
	a.sizeFilter() // grow the request filter before it fills
	if act.MoreExpiry {
		ctx.Send(ctx.Self(), tick{now: now, more: true})
	}
}

// sizeFilter (re)builds the request filter when the SKU may now decide
// more request_ids than it was sized for (core.RequestCapacity).
func (a *skuActor) sizeFilter() {
	want := a.core.RequestCapacity()
	if a.filter != nil && uint64(len(a.filter.words))*64 >= min(want*filterBitsPerRequest, filterMaxBits) {
		return
	}
	f := newRequestFilter(want)
	a.core.Machine().EachRequestID(f.add)
	a.filter = f
	a.h.requests.Store(f)
}
