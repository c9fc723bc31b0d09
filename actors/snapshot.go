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
	// none), handed to the core; at is when recovery loaded it.
	index uint64
	at    time.Time
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
	a.snap.writers.Add(1)
	go func() {
		defer owner.writers.Done()
		done := w.run(durable)
		done.owner = owner
		done.info.Took, done.info.Pause = time.Since(start)+pause, pause
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

// truncateLog removes the records the oldest kept snapshot covers, at a
// segment boundary: tidwall/wal rewrites the rest of the segment that holds
// the new first record, so the cut is placed at the last record of an
// older segment (a one-record rewrite); records are kept until a whole
// segment is covered. It runs on the actor, so it does not wait for one of
// the engine's TruncationsMax slots: with none free, the records are kept
// until the next snapshot.
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
	starts, err := segmentStarts(filepath.Join(a.h.dir, "wal"))
	if err != nil {
		log.Warn("listing the log's segments", "err", err)
		return
	}
	cut := truncationPoint(starts, oldestKept+1, a.log.FirstIndex())
	if cut == 0 {
		return
	}
	if err := a.log.TruncateFront(cut); err != nil {
		a.fail(err)
	}
}

// truncationPoint returns the largest index that ends a segment (the one
// before a later segment's first index), is at most need (the first record
// still needed) and beyond first (the log's first record); 0 if none.
func truncationPoint(starts []uint64, need, first uint64) uint64 {
	var cut uint64
	for _, s := range starts {
		if s >= 2 && s-1 <= need && s-1 > first {
			cut = s - 1
		}
	}
	return cut
}

// segmentStarts returns the first index of every segment of a log
// directory, ascending.
func segmentStarts(dir string) ([]uint64, error) {
	segs, err := wal.Segments(dir)
	if err != nil {
		return nil, err
	}
	starts := make([]uint64, len(segs))
	for i, s := range segs {
		starts[i] = s.FirstIndex
	}
	return starts, nil
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

// restoreSnapshot loads the newest usable snapshot into a.m and returns the
// index of the first record to replay after it. A snapshot is usable when
// it reads back whole (CRC-32C), names this SKU, and the log holds every
// record after it: first <= index+1 and index <= last. Unusable ones are
// reported and passed over (an older one means a longer replay). With none,
// the log must reach back to record 1; if it does not, recovery fails with
// an error that says so, and the SKU answers UNAVAILABLE rather than start
// from a partial history.
func (a *skuActor) restoreSnapshot() (uint64, error) {
	dir := a.snapshotDir()
	log := a.cfg.Logger.With("campaign", a.h.campaignID, "sku", a.h.skuID)
	a.snap = snapshots{at: time.Now()}
	if removed, err := snapshot.RemoveTemp(dir); err != nil {
		return 0, err
	} else if len(removed) > 0 {
		log.Warn("removed unfinished snapshot files", "files", removed)
	}
	last := a.log.LastIndex()
	first := a.log.FirstIndex()
	if first == 0 {
		first = last + 1 // an empty log continues after its last index
	}
	loaded, refused, err := snapshot.LoadNewest(dir, func(h snapshot.Header) error {
		return snapshotFits(h, a.h.campaignID, a.h.skuID, first, last)
	})
	if err != nil {
		return 0, err
	}
	for _, r := range refused {
		log.Warn("snapshot not used", "path", r.Path, "index", r.Index, "err", r.Err)
	}
	if err := checkLogNotShort(refused, last); err != nil {
		return 0, err
	}
	if loaded == nil {
		if first > 1 {
			return 0, fmt.Errorf("the log starts at record %d and no usable snapshot covers records 1..%d (%d refused): "+
				"restore a snapshot into %s (seckillctl restore) instead of starting empty", first, first-1, len(refused), dir)
		}
		return 1, nil
	}
	a.m = loaded.Machine
	a.snap.index = loaded.Index
	log.Info("snapshot loaded", "path", loaded.Path, "index", loaded.Index,
		"reservations", loaded.Header.Reservations, "replay_from", loaded.Index+1, "log_last", last)
	return loaded.Index + 1, nil
}

// errSnapshotUnusable is wrapped by snapshotFits.
var errSnapshotUnusable = errors.New("snapshot does not fit the log")

// errSnapshotBeyondLog is wrapped by snapshotFits for a snapshot of
// records the log no longer holds.
var errSnapshotBeyondLog = fmt.Errorf("%w: beyond the end of the log", errSnapshotUnusable)

// checkLogNotShort fails the recovery when a whole snapshot of this SKU
// (its checksum holds) was taken at a record after the log's last one. A
// snapshot is written only once the log is durable up to its record, so
// the log has lost durable, acknowledged records (a truncated or deleted
// segment): replaying the shorter log would forget reservations and sell
// their units again. The operator decides instead (seckillctl restore).
func checkLogNotShort(refused []snapshot.Refused, last uint64) error {
	for _, r := range refused {
		if !errors.Is(r.Err, errSnapshotBeyondLog) {
			continue
		}
		if _, _, err := snapshot.Read(r.Path); err != nil {
			continue // damaged: no proof of anything
		}
		return fmt.Errorf("the log ends at record %d but the whole snapshot %s was taken at record %d: "+
			"durable records are missing from the log (a truncated or deleted segment); "+
			"restore the SKU from a backup or from that snapshot (seckillctl restore) instead of selling from a shorter history",
			last, r.Path, r.Index)
	}
	return nil
}

// snapshotFits reports whether a snapshot of campaign/sku at h.Index can
// start a replay of a log holding records first..last.
func snapshotFits(h snapshot.Header, campaignID, skuID string, first, last uint64) error {
	switch {
	case h.CampaignID != campaignID || h.SKUID != skuID:
		return fmt.Errorf("%w: it is of %s/%s", errSnapshotUnusable, h.CampaignID, h.SKUID)
	case h.Index > last:
		return fmt.Errorf("%w: it includes records up to %d, the log ends at %d", errSnapshotBeyondLog, h.Index, last)
	case h.Index+1 < first:
		return fmt.Errorf("%w: it ends at record %d, the log starts at %d", errSnapshotUnusable, h.Index, first)
	}
	return nil
}
