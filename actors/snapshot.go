package actors

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/snapshot"
	"github.com/seckill/seckill/wal"
)

// Snapshot defaults (see Config).
const (
	// DefaultSnapshotEvery is the records between automatic snapshots: a
	// restart replays at most about this many (~0.2 s per 500,000 here).
	DefaultSnapshotEvery = 500_000
	// DefaultSnapshotInterval bounds the age of the newest snapshot of a
	// SKU that has new records.
	DefaultSnapshotInterval = 5 * time.Minute
	// DefaultSnapshotKeep is the snapshots kept per SKU: the newest, and
	// one to fall back to if it is damaged (the log is kept from it).
	DefaultSnapshotKeep = 2
	// snapshotRetryAfter is the pause after a failed snapshot before an
	// automatic one is tried again.
	snapshotRetryAfter = core.DefaultSnapshotRetryAfter
)

func (c *Config) snapshotEvery() uint64 {
	switch {
	case c.SnapshotEvery < 0:
		return 0
	case c.SnapshotEvery == 0:
		return DefaultSnapshotEvery
	}
	return uint64(c.SnapshotEvery)
}

func (c *Config) snapshotInterval() time.Duration {
	switch {
	case c.SnapshotInterval < 0:
		return 0
	case c.SnapshotInterval == 0:
		return DefaultSnapshotInterval
	}
	return c.SnapshotInterval
}

func (c *Config) snapshotKeep() int {
	if c.SnapshotKeep <= 0 {
		return DefaultSnapshotKeep
	}
	return c.SnapshotKeep
}

// SnapshotInfo describes a snapshot that is durable (fsynced and renamed
// into place).
type SnapshotInfo struct {
	Path         string        `json:"path"`
	Index        uint64        `json:"index"` // log index of the last record it includes
	Reservations uint32        `json:"reservations"`
	Bytes        int64         `json:"bytes"`
	Took         time.Duration `json:"took_ns"`  // from the freeze to durable
	Pause        time.Duration `json:"pause_ns"` // the actor's share: the freeze
}

// Snapshot writes a snapshot of one SKU now and returns once it is durable.
// The actor only freezes its state (copy on write, well under a
// millisecond per million reservations); a goroutine waits until the log is
// durable up to the snapshot's index, writes the file and prunes old
// snapshots, and the actor then truncates the log they no longer need.
// A snapshot already running when the call arrives is not reused: a new
// one starts after it. Errors: ErrUnknownSKU, ErrUnavailable, ErrClosed,
// ctx.Err(), or the I/O error of the write.
func (e *Engine) Snapshot(ctx context.Context, campaignID, skuID string) (SnapshotInfo, error) {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return SnapshotInfo{}, ErrClosed
	}
	h := e.SKU(campaignID, skuID)
	if h == nil {
		return SnapshotInfo{}, ErrUnknownSKU
	}
	req := &snapshotRequest{reply: make(chan snapshotReply, 1)}
	e.system.Root.Send(h.pid, req)
	select {
	case r := <-req.reply:
		return r.info, r.err
	case <-ctx.Done():
		return SnapshotInfo{}, ctx.Err()
	}
}

// snapshotMessage is a message of the snapshot protocol to a SKU actor.
type snapshotMessage interface{ isSnapshotMessage() }

// snapshotRequest asks for a snapshot (Engine.Snapshot).
type snapshotRequest struct{ reply chan snapshotReply } // capacity 1

// snapshotReply answers a snapshotRequest.
type snapshotReply struct {
	info SnapshotInfo
	err  error
}

// snapshotDone tells the actor that its writer finished.
type snapshotDone struct {
	owner      *snapshots // the actor incarnation that started it
	info       SnapshotInfo
	oldestKept uint64 // index of the oldest snapshot left after pruning
	err        error
}

func (*snapshotRequest) isSnapshotMessage() {}
func (*snapshotDone) isSnapshotMessage()    {}

// snapshots is the shell's snapshot bookkeeping; the core decides when a
// snapshot is due (core.Snapshot). Only the actor's goroutine touches it,
// except writers (a WaitGroup) and stopped.
type snapshots struct {
	// index is the log index of the snapshot recovery started from (0:
	// none), handed to the core.
	index uint64
	// queued are on-demand callers waiting for the next snapshot to start.
	queued  []chan snapshotReply
	writers sync.WaitGroup
	stopped atomic.Bool
}

func (a *skuActor) snapshotDir() string { return filepath.Join(a.h.dir, "snapshots") }

// onSnapshot handles the snapshot protocol's messages.
func (a *skuActor) onSnapshot(ctx actor.Context, msg snapshotMessage) {
	switch msg := msg.(type) {
	case *snapshotRequest:
		start := monoNow()
		s, err := a.core.RequestSnapshot()
		pause := time.Duration(monoNow() - start)
		switch {
		case errors.Is(err, core.ErrUndefined):
			msg.reply <- snapshotReply{err: ErrUnknownSKU}
			return
		case err != nil:
			msg.reply <- snapshotReply{err: err}
			return
		}
		a.snap.queued = append(a.snap.queued, msg.reply)
		if s != nil {
			a.startSnapshot(ctx, s, pause)
		}
	case *snapshotDone:
		if msg.owner != &a.snap {
			return // started by an earlier incarnation of this actor
		}
		a.finishSnapshot(ctx, msg)
	}
}

// startSnapshot hands the state the core froze (at the log's last index;
// the freeze took pause) to a writer goroutine, with the callers waiting
// for a snapshot: the only pause it adds to request handling is the freeze.
func (a *skuActor) startSnapshot(ctx actor.Context, s *core.Snapshot, pause time.Duration) {
	start := time.Now()
	callers := a.snap.queued
	a.snap.queued = nil

	// The state includes records that may not be fsynced yet: the file is
	// written only once they are, so a snapshot never runs ahead of the log.
	durable := make(chan error, 1)
	a.log.Await(s.Index, wal.WaiterFunc(func(err error) { durable <- err }))

	w := snapshotWriter{
		dir: a.snapshotDir(), keep: a.cfg.snapshotKeep(), index: s.Index, frozen: s.Frozen,
		opts:  snapshot.Options{NoSync: a.cfg.Fsync == wal.FsyncNeverBenchmarkOnly},
		slots: a.cfg.snapshotWriters,
	}
	owner, root, self := &a.snap, ctx.ActorSystem().Root, ctx.Self()
	act, clock := &a.h.activity, a.cfg.Clock
	a.snap.writers.Add(1)
	go func() {
		defer owner.writers.Done()
		done := w.run(durable)
		done.owner = owner
		done.info.Took, done.info.Pause = time.Since(start)+pause, pause
		if done.err == nil {
			act.snapshotWritten(clock(), done.info.Index) // before its callers hear of it
		}
		for _, c := range callers {
			c <- snapshotReply{info: done.info, err: done.err}
		}
		if !owner.stopped.Load() {
			root.Send(self, done)
		}
	}()
}

// snapshotWriter is the work of one snapshot off the actor's goroutine.
type snapshotWriter struct {
	dir    string
	keep   int
	index  uint64
	frozen *sku.Frozen
	opts   snapshot.Options
	slots  chan struct{} // the engine's SnapshotWritersMax
}

func (w *snapshotWriter) run(durable <-chan error) *snapshotDone {
	done := &snapshotDone{info: SnapshotInfo{Index: w.index}}
	if err := <-durable; err != nil {
		done.err = fmt.Errorf("%w: the log failed before the snapshot's records were durable: %w", ErrUnavailable, err)
		return done
	}
	// Its file descriptors count against the engine's budget
	// (FileOperationsMax): it waits for a writer slot.
	w.slots <- struct{}{}
	defer func() { <-w.slots }()
	info, err := snapshot.Write(w.dir, w.frozen, w.index, w.opts)
	if err != nil {
		done.err = err
		return done
	}
	done.info = SnapshotInfo{Path: info.Path, Index: info.Index, Reservations: info.Reservations, Bytes: info.Bytes}
	done.oldestKept, _, done.err = snapshot.Prune(w.dir, w.keep, !w.opts.NoSync)
	return done
}

// finishSnapshot records a written snapshot, truncates the log that the
// oldest snapshot kept no longer needs, and starts the snapshot asked for
// meanwhile, if any.
func (a *skuActor) finishSnapshot(ctx actor.Context, done *snapshotDone) {
	logger := a.cfg.Logger.With("campaign", a.h.campaignID, "sku", a.h.skuID)
	a.cfg.metrics.observeSnapshot(done)
	if done.err != nil {
		logger.Error("snapshot failed", "err", done.err)
	} else {
		logger.Info("snapshot written", "path", done.info.Path, "index", done.info.Index,
			"reservations", done.info.Reservations, "bytes", done.info.Bytes,
			"took", done.info.Took, "pause", done.info.Pause)
		a.truncateLog(done.oldestKept, logger)
	}
	start := monoNow()
	act := a.core.SnapshotDone(a.cfg.Clock(), done.info.Index, done.err)
	pause := time.Duration(monoNow() - start)
	switch {
	case act.SnapshotRefused != nil:
		for _, c := range a.snap.queued {
			c <- snapshotReply{err: act.SnapshotRefused}
		}
		a.snap.queued = nil
	case act.Snapshot != nil:
		a.startSnapshot(ctx, act.Snapshot, pause)
	}
}

// truncateLog removes the records the oldest kept snapshot covers; the log
// picks the segment boundary (wal.Log.TruncateBefore). It runs on the
// actor, so it does not wait for one of the engine's TruncationsMax slots:
// with none free, the records are kept until the next snapshot. Only a
// failed log (wal.ErrFailed) makes the SKU fail-stop; any other error
// changed nothing and is logged.
func (a *skuActor) truncateLog(oldestKept uint64, log interface {
	Warn(string, ...any)
	Info(string, ...any)
}) {
	if oldestKept == 0 || a.log == nil || a.failed != nil {
		return
	}
	select {
	case a.cfg.truncations <- struct{}{}:
		defer func() { <-a.cfg.truncations }()
	default:
		log.Info("log truncation left to the next snapshot: TruncationsMax truncations running", "max", TruncationsMax)
		return
	}
	need := a.retain.Cut(oldestKept+1, a.log.DurableIndex(), a.log.LastIndex(), a.cfg.Clock())
	if _, err := a.log.TruncateBefore(need); err != nil {
		if errors.Is(err, wal.ErrFailed) {
			a.fail(err)
			return
		}
		log.Warn("log truncation failed; the records are kept", "err", err)
	}
}

// stopSnapshots waits for a running writer (it never waits on the actor)
// and keeps it from messaging this incarnation.
func (a *skuActor) stopSnapshots() {
	a.snap.stopped.Store(true)
	a.snap.writers.Wait()
	for _, c := range a.snap.queued {
		c <- snapshotReply{err: ErrUnavailable}
	}
	a.snap.queued = nil
}
