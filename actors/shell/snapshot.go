package shell

import (
	"errors"
	"fmt"
	"time"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/recovery"
	"github.com/seckill/seckill/snapshot"
	"github.com/seckill/seckill/wal"
)

// Snapshots is where a SKU's snapshots are kept: snapshot.Files (a
// folder of files) and *snapshot.Memory (the simulator's) implement it.
// Write and Prune run in a JobSnapshot, off the shell.
type Snapshots interface {
	recovery.Snapshots
	// RemoveTemp removes the unfinished writes a crash left, returning
	// their names.
	RemoveTemp() ([]string, error)
	// Write stores f as the snapshot at index, durably.
	Write(f *sku.Frozen, index uint64) (snapshot.Info, error)
	// Prune removes all but the newest keep snapshots of the SKU and
	// returns the index of the oldest kept (0: none). A file of another
	// SKU is neither counted nor removed (snapshot.ListOwn): recovery
	// passes over it, so the log must not be truncated up to it.
	Prune(keep int) (oldestKept uint64, err error)
	// String names where they are, for messages.
	String() string
}

// SnapshotInfo describes a snapshot that is durable (written, fsynced and
// in place).
type SnapshotInfo struct {
	Path         string        `json:"path"`
	Index        uint64        `json:"index"` // log index of the last record it includes
	Reservations uint32        `json:"reservations"`
	Bytes        int64         `json:"bytes"`
	Took         time.Duration `json:"took_ns"`  // from the freeze to durable
	Pause        time.Duration `json:"pause_ns"` // the shell's share: the freeze
}

// SnapshotWaiter is told once how a snapshot it asked for ended. It is
// called on the goroutine that runs the snapshot's Job (or on the shell's,
// when the snapshot could not start) and must not block.
type SnapshotWaiter interface {
	SnapshotDone(info SnapshotInfo, err error)
}

// snapshots is the shell's snapshot bookkeeping; the core decides when a
// snapshot is due (core.Core.Snapshot).
type snapshots struct {
	// queued are on-demand callers waiting for the next snapshot to start.
	queued []SnapshotWaiter
	// job is the snapshot started and not done: waiting for its records
	// to be durable, or written by the executor.
	job *Job
}

// snapshotResult is what a JobSnapshot did.
type snapshotResult struct {
	info       SnapshotInfo
	oldestKept uint64 // index of the oldest snapshot left after pruning
	err        error
}

// RequestSnapshot asks at now for a snapshot (an operator's): w is told
// once it is durable or failed. A snapshot already running is not reused:
// a new one starts after it. An undefined or failed SKU answers at once
// (core.ErrUndefined, the failure).
func (s *Shell) RequestSnapshot(now time.Time, w SnapshotWaiter) {
	start := s.stopwatch()
	snap, err := s.core.RequestSnapshot()
	pause := time.Duration(s.stopwatch() - start)
	if err != nil {
		w.SnapshotDone(SnapshotInfo{}, err)
		return
	}
	s.snap.queued = append(s.snap.queued, w)
	if snap != nil {
		s.startSnapshot(now, snap, pause)
	}
}

// answerQueued answers the callers waiting for a snapshot to start err.
func (s *Shell) answerQueued(err error) {
	for _, w := range s.snap.queued {
		w.SnapshotDone(SnapshotInfo{}, err)
	}
	s.snap.queued = nil
}

// startSnapshot hands the state the core froze (at the log's last index;
// the freeze took pause) to a JobSnapshot, with the callers waiting for a
// snapshot: the only pause it adds to the SKU is the freeze. The state
// includes records that may not be durable yet: the job is handed to the
// executor only once they are, so a snapshot never runs ahead of the log.
func (s *Shell) startSnapshot(now time.Time, snap *core.Snapshot, pause time.Duration) {
	if s.snap.job != nil {
		panic(fmt.Sprintf("shell: %s/%s: a snapshot at %d started while the one at %d runs",
			s.cfg.CampaignID, s.cfg.SKUID, snap.Index, s.snap.job.Index))
	}
	j := s.job(JobSnapshot, now)
	j.Index = snap.Index
	s.snap.job = j
	waiters := s.snap.queued
	s.snap.queued = nil
	store, keep, host, frozen, index := s.cfg.Snapshots, s.cfg.SnapshotKeep, s.cfg.Host, snap.Frozen, snap.Index
	start := s.stopwatch()
	var durableErr error
	j.run = func() {
		r := &j.snap
		r.info.Index = index
		if durableErr != nil {
			r.err = fmt.Errorf("%w: the log failed before the snapshot's records were durable: %w", core.ErrUnavailable, durableErr)
		} else {
			r.info, r.oldestKept, r.err = writeSnapshot(store, keep, frozen, index)
		}
		r.info.Took, r.info.Pause = time.Duration(s.stopwatch()-start)+pause, pause
		if r.err == nil {
			host.SnapshotWritten(r.info) // before its callers hear of it
		}
		for _, w := range waiters {
			w.SnapshotDone(r.info, r.err)
		}
	}
	executor := s.cfg.Executor
	s.log.Await(index, wal.WaiterFunc(func(err error) {
		durableErr = err
		executor.Go(j)
	}))
}

// writeSnapshot writes a snapshot and prunes the old ones.
func writeSnapshot(store Snapshots, keep int, frozen *sku.Frozen, index uint64) (SnapshotInfo, uint64, error) {
	info, err := store.Write(frozen, index)
	if err != nil {
		return SnapshotInfo{Index: index}, 0, err
	}
	out := SnapshotInfo{Path: info.Path, Index: info.Index, Reservations: info.Reservations, Bytes: info.Bytes}
	oldestKept, err := store.Prune(keep)
	return out, oldestKept, err
}

// snapshotDone records a snapshot written, truncates the log that the
// oldest snapshot kept no longer needs, and starts the snapshot asked for
// meanwhile, if any; a recovery that waited for it runs now.
func (s *Shell) snapshotDone(now time.Time, j *Job) {
	if j != s.snap.job {
		panic(fmt.Sprintf("shell: %s/%s: the snapshot at %d is done, but the one running is %v",
			s.cfg.CampaignID, s.cfg.SKUID, j.Index, s.snap.job))
	}
	s.snap.job = nil
	r := &j.snap
	s.cfg.Host.SnapshotDone(r.info, r.err)
	if r.err != nil {
		s.logger.Error("snapshot failed", "err", r.err)
	} else {
		s.logger.Info("snapshot written", "path", r.info.Path, "index", r.info.Index,
			"reservations", r.info.Reservations, "bytes", r.info.Bytes, "took", r.info.Took, "pause", r.info.Pause)
		s.truncate(now, r.oldestKept)
	}
	start := s.stopwatch()
	act := s.core.SnapshotDone(now, r.info.Index, r.err)
	pause := time.Duration(s.stopwatch() - start)
	switch {
	case act.SnapshotRefused != nil:
		s.answerQueued(act.SnapshotRefused)
	case act.Snapshot != nil:
		s.startSnapshot(now, act.Snapshot, pause)
	}
	if s.recoverWaits {
		s.recoverWaits = false
		s.recoverAgain(now)
	}
}

// truncate removes the records the oldest kept snapshot covers, less
// those the feed retention (feed.Retention) and the standbys
// (Config.RetainFrom) hold back; the log picks the
// segment boundary (wal.Log.TruncateBefore). It does not wait for a
// truncation slot (Config.Truncations): with none free, the records are
// kept until the next snapshot. Only a failed log (wal.ErrFailed) makes
// the SKU fail-stop; any other error changed nothing and is logged.
func (s *Shell) truncate(now time.Time, oldestKept uint64) {
	if oldestKept == 0 || s.log == nil || s.failed != nil {
		return
	}
	if t := s.cfg.Truncations; t != nil {
		if !t.TryAcquire() {
			s.logger.Info("log truncation left to the next snapshot: every truncation slot is taken")
			return
		}
		defer t.Release()
	}
	lastAt := time.UnixMilli(s.core.Machine().LastAt())
	need := s.retain.Cut(oldestKept+1, s.log.DurableIndex(), s.log.LastIndex(), now, lastAt)
	if s.cfg.RetainFrom != nil {
		if standbys := s.cfg.RetainFrom(); standbys != 0 {
			need = min(need, standbys)
		}
	}
	if _, err := s.log.TruncateBefore(need); err != nil {
		if errors.Is(err, wal.ErrFailed) {
			s.failAt(now, err)
			return
		}
		s.logger.Warn("log truncation failed; the records are kept", "err", err)
	}
}
