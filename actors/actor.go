package actors

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/recovery"
	"github.com/seckill/seckill/wal"
)

// tick asks the actor to run one bounded expiry step.
type tick struct{}

// skuActor is the protoactor shell around one sku.Machine: it takes calls
// in batches from the SKU's inbox (inbox.go), lets the Machine decide them
// one at a time, appends the records to the SKU's log and hands the batch
// to the log, which releases it once every record it depends on is
// fsynced (group commit: the next batch forms while the current one
// syncs). It keeps no state that the
// log cannot rebuild: on Started (first start, or after a supervisor
// restart caused by a panic) it rebuilds the Machine from disk.
type skuActor struct {
	h          *SKU
	cfg        *Config
	dispatcher *pinnedDispatcher // runs this actor; stopped with it
	m          *sku.Machine
	log        *wal.Log
	// failed is set when the log failed or recovery failed: the actor then
	// answers ErrUnavailable to everything (fail-stop) until it recovers again (retry.go).
	failed error

	// filter holds the decided request_ids, published as h.requests.
	filter *requestFilter

	snap snapshots // snapshot bookkeeping (snapshot.go)

	// Recovery after a log failure (retry.go): retryWait is the current
	// backoff (0: healthy), retryArmed a recovery is scheduled, healthyAt
	// the index whose durability ends the backoff.
	retryWait  time.Duration
	retryArmed bool
	healthyAt  uint64

	out   []sku.Record // records of the current call, reused
	buf   []byte       // payload scratch, reused
	spare []*call      // handed to the inbox in exchange for its calls
}

// Receive implements actor.Actor.
func (a *skuActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case drain:
		a.drain(ctx)
	case tick:
		a.expire(ctx)
		a.maybeSnapshot(ctx)
	case snapshotMessage:
		a.onSnapshot(ctx, msg)
	case retryRecovery:
		a.retryRecovery()
	case *actor.Started:
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

// recover opens the log and rebuilds the state from the newest usable
// snapshot and the records after it (restoreState, recovery.go).
func (a *skuActor) recover() {
	a.h.unavailable.Store(true)
	a.m, a.failed = sku.New(), nil
	start := time.Now()
	log, err := wal.Open(filepath.Join(a.h.dir, "wal"), a.cfg.walOptions())
	if err == nil {
		a.log = log
		a.h.log.Store(log)
		err = a.restoreState()
	}
	if err != nil {
		a.failed = fmt.Errorf("%w: %s/%s: %v", ErrUnavailable, a.h.campaignID, a.h.skuID, err)
		a.cfg.Logger.Error("SKU recovery failed; it answers UNAVAILABLE", "campaign", a.h.campaignID, "sku", a.h.skuID, "err", err)
		a.h.recovered(a.failed)
		return
	}
	a.sizeFilter()
	a.h.nextExpiry.Store(0) // the first tick looks for due expiries
	a.h.publish(a.view())
	a.h.unavailable.Store(false)
	a.cfg.Logger.Info("SKU recovered", "campaign", a.h.campaignID, "sku", a.h.skuID,
		"records", a.log.LastIndex(), "reservations", a.m.Counts().Reservations, "took", time.Since(start))
	a.h.recovered(nil)
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
	return durableView{def: a.m.Definition(), counts: a.m.Counts(), paused: a.m.Paused()}
}

// drain takes the waiting calls from the inbox, decides them one at a
// time, and registers those that wait on the log as one batch, released
// once the log is durable up to the last record appended: a reply that
// rests on earlier, not yet durable records (a SOLD_OUT, a duplicate, a
// read) waits for them too.
func (a *skuActor) drain(ctx actor.Context) {
	a.noteHealthy()
	b := batchPool.Get().(*batch)
	calls, more := a.h.in.take(a.spare)
	if more {
		ctx.Send(ctx.Self(), drain{}) // before deciding: a panic must not strand the rest
	}
	if len(calls) > 0 {
		a.h.taken(calls[len(calls)-1].enqueuedAt, len(calls))
	}
	next := 0 // calls[next:] are not decided yet
	defer func() {
		if r := recover(); r != nil {
			a.contain(ctx, b, calls[min(next, len(calls)):])
			panic(r) // protoactor's supervisor restarts the actor
		}
	}()
	// One clock reading decides the whole batch (its records carry it),
	// and one more per call times it for the metrics.
	now, start := a.cfg.Clock().UnixMilli(), monoNow()
	for _, c := range calls {
		next++
		kind := c.kind // c is its caller's again once answered at once
		if a.handle(c, now) {
			b.calls = append(b.calls, c)
		}
		end := monoNow() // the monotonic clock alone: half the cost of time.Now
		a.cfg.metrics.observeCall(kind, time.Duration(end-start))
		start = end
	}
	clear(calls)
	a.spare = calls[:0]
	if len(b.calls) == 0 {
		batchPool.Put(b)
		return
	}
	b.owner, b.view = a.h, a.view()
	a.log.Await(a.log.LastIndex(), b) // the calls belong to their callers again from here on
}

// contain keeps a panic while deciding one call (a programming error) from
// stranding the rest of its batch: the calls decided before it wait on the
// log as usual, those after it go back to the front of the inbox for the
// restarted actor. The panicking call waits with the decided ones if the
// panic came after its decision (in the metrics); otherwise it is never
// answered and its caller's context ends it (result unknown).
func (a *skuActor) contain(ctx actor.Context, b *batch, undecided []*call) {
	if len(b.calls) > 0 && a.log != nil {
		b.owner, b.view = a.h, a.view()
		a.log.Await(a.log.LastIndex(), b)
	}
	a.h.queued.Add(int64(len(undecided)))
	if a.h.in.requeue(undecided) {
		ctx.Send(ctx.Self(), drain{})
	}
}

// handle decides one call at time now (Unix ms) and appends its records.
// It returns false when it answered the call at once (fail-stop);
// otherwise the call waits for the log with its batch.
func (a *skuActor) handle(c *call, now int64) (wait bool) {
	if a.failed != nil {
		c.answer(ErrUnavailable)
		return false
	}
	out := a.out[:0]
	m := a.m
	kind := c.kind
	if c.tag != "" && !m.ValidTag(c.seq, c.tag) {
		kind = 0 // a wrong tag names no reservation: answered below as NOT_FOUND
		c.result = sku.Result{Outcome: sku.OutcomeNotFound}
	}
	switch kind {
	case callReserve:
		c.result, out = m.Reserve(now, c.requestID, c.userID, out)
		if !c.result.Duplicate && decided(c.result.Outcome) {
			a.filter.add(c.requestID)
		}
	case callPay:
		c.result, out = m.Pay(now, c.seq, c.paymentID, c.amount, out)
	case callClose:
		c.result, out = m.Close(now, c.seq, c.reason, out)
	case callRelease:
		c.result, out = m.Release(now, c.seq, out)
	case callPause:
		c.outcome, out = m.Pause(now, out)
	case callResume:
		c.outcome, out = m.Resume(now, out)
	case callDefine:
		d := *c.def
		if m.Defined() {
			d.IDKey = m.Definition().IDKey // the key never changes
		} else if _, err := io.ReadFull(a.cfg.Rand, d.IDKey[:]); err != nil {
			c.err = fmt.Errorf("drawing the reservation id key: %w", err)
			break
		}
		c.outcome, out, c.err = m.Define(now, d, out)
		a.sizeFilter()
	case callGet:
		c.result.Reservation, c.found = m.Get(c.seq)
	case callLookup:
		c.result, c.found = m.Lookup(c.requestID)
	case callAudit:
		c.report.audit = m.Audit()
	case callRefunds:
		c.report.refunds = m.Refunds()
	case callHash:
		c.report.hash = m.Hash()
	}
	a.out = out
	c.wrote = len(out) > 0
	if c.wrote && a.appendRecords(out) == 0 {
		// The log had failed: none of the call's records is in it, so
		// nothing was done (a partly appended call waits, and learns
		// ErrResultUnknown with its batch).
		c.answer(ErrUnavailable)
		return false
	}
	return true
}

// appendRecords hands the records to the log's pending batch; it does not
// wait for the disk. It returns how many it handed over: fewer than
// len(out) when the log failed (the SKU is then failed too).
func (a *skuActor) appendRecords(out []sku.Record) (appended int) {
	for i := range out {
		a.buf = out[i].AppendPayload(a.buf[:0])
		if _, err := a.log.Append(byte(out[i].Type), a.buf); err != nil {
			a.fail(err)
			return i
		}
	}
	return len(out)
}

// fail makes the SKU fail-stop: the Machine may now hold decisions that are
// not on disk, so it acknowledges nothing more until it has recovered from
// disk again (retry.go; PostgreSQL's fsync-failure policy: never retry the
// fsync and go on).
func (a *skuActor) fail(err error) {
	a.failed = fmt.Errorf("%w: log failed: %v", ErrUnavailable, err)
	a.h.unavailable.Store(true)
	if errors.Is(err, wal.ErrSyncFailed) {
		// The page cache may hold records the disk lost: rebuilding from
		// the file now could acknowledge on top of them (wal.ErrSyncFailed).
		a.cfg.Logger.Error("SKU log fsync failed; fail-stop until the process restarts (check the disk first)",
			"campaign", a.h.campaignID, "sku", a.h.skuID, "err", err)
		return
	}
	a.cfg.Logger.Error("SKU log failed; fail-stop until it recovers from disk", "campaign", a.h.campaignID, "sku", a.h.skuID, "err", err)
	a.scheduleRetry()
}

// expire runs one bounded expiry step, and asks for another while more
// reservations are due.
func (a *skuActor) expire(ctx actor.Context) {
	if a.failed != nil || !a.m.Defined() {
		return
	}
	a.noteHealthy()
	a.sizeFilter() // grow the request filter before it fills
	now := a.cfg.Clock().UnixMilli()
	out := a.m.Expire(now, a.cfg.ExpiryBatch, a.out[:0])
	a.out = out
	next, ok := a.m.NextExpiry()
	if !ok {
		next = math.MaxInt64
	}
	a.h.nextExpiry.Store(next)
	if len(out) == 0 {
		return
	}
	a.cfg.metrics.expiries.Add(float64(len(out)))
	a.appendRecords(out)
	a.log.Await(a.log.LastIndex(), &publisher{owner: a.h, view: a.view()})
	if next <= now {
		ctx.Send(ctx.Self(), tick{})
	}
}

// decided reports whether a reserve outcome is recorded against its
// request_id (and so must be repeated to a retry).
func decided(o sku.Outcome) bool {
	return o == sku.OutcomeAccepted || o == sku.OutcomeSoldOut
}

// sizeFilter (re)builds the request filter when the SKU may now decide
// more request_ids than it was sized for: twice the larger of sale_limit
// and what is already decided.
func (a *skuActor) sizeFilter() {
	c := a.m.Counts()
	want := 2 * max(uint64(c.SaleLimit), uint64(c.Reservations)+uint64(c.Rejected))
	if a.filter != nil && uint64(len(a.filter.words))*64 >= min(want*filterBitsPerRequest, filterMaxBits) {
		return
	}
	f := newRequestFilter(want)
	a.m.EachRequestID(f.add)
	a.filter = f
	a.h.requests.Store(f)
}
