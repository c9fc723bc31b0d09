package shell

import (
	"errors"
	"fmt"
	"time"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/recovery"
)

// Recover opens the log and rebuilds the SKU from the newest usable
// snapshot and the records after it (recovery.Plan), as at a start. A
// failed recovery leaves the SKU unavailable and the core schedules
// another (core.Core.RecoveryFailed): the error returned says why. The
// host hears of it either way (Host.Recovered).
func (s *Shell) Recover(now time.Time) error {
	s.recoverWaits = false
	s.snap = snapshots{}
	start := s.stopwatch()
	var res *recovery.Result
	log, err := s.cfg.OpenLog()
	if err == nil {
		s.log = log
		res, err = s.restore()
	}
	if err != nil {
		s.recoveryFailed(now, fmt.Errorf("%s/%s: %w", s.cfg.CampaignID, s.cfg.SKUID, err), "SKU recovery failed; it answers UNAVAILABLE")
		return s.failed
	}
	s.core.Recovered(now, res.Machine, s.log.LastIndex(), res.Base.Index)
	s.failed = nil
	s.logger.Info("SKU recovered", "records", s.log.LastIndex(), "reservations", res.Machine.Counts().Reservations,
		"took", time.Duration(s.stopwatch()-start))
	s.cfg.Host.Recovered(&Recovery{Machine: res.Machine, View: s.View(), Plan: res, Log: s.log})
	return nil
}

// FailStop starts the shell failed with cause instead of recovering: the
// SKU's host knows the disk lost records (cause wraps wal.ErrSyncFailed,
// which the core never heals), so the SKU answers core.ErrUnavailable
// until the process restarts, its log unopened.
func (s *Shell) FailStop(now time.Time, cause error) {
	s.recoverWaits = false
	s.snap = snapshots{}
	s.recoveryFailed(now, cause, "SKU not recovered after a failed fsync; it answers UNAVAILABLE until the process restarts (check the disk first)")
}

// recoveryFailed fails the SKU at now with err and tells the host.
func (s *Shell) recoveryFailed(now time.Time, err error, msg string) {
	s.core.RecoveryFailed(now, err)
	s.failed = s.core.Failed()
	retry, armed := s.core.RetryAt()
	s.logger.Error(msg, "err", err, "retry", armed, "retry_at", retry)
	s.cfg.Host.Recovered(&Recovery{Err: s.failed})
}

// recoverAgain rebuilds a failed SKU from disk when its core says a
// recovery is due (after a log failure or a failed recovery). A snapshot
// being written is waited for first (it would race the recovery's
// removal of unfinished files and its reading of the snapshots): the
// recovery then runs when its Job is done.
func (s *Shell) recoverAgain(now time.Time) {
	if s.snap.job != nil {
		s.recoverWaits = true
		return
	}
	if s.cfg.RecoverySlot != nil {
		defer s.cfg.RecoverySlot()()
	}
	s.logger.Info("SKU recovering from disk after a failure", "cause", s.failed)
	s.answerQueued(core.ErrUnavailable)
	s.closeLog()
	s.Recover(now)
}

// restore rebuilds the state from the SKU's snapshots and log with the
// one recovery rule (recovery.Plan). Snapshots passed over are reported.
// A log that does not reach back to record 1 with no usable snapshot, or
// a log shorter than a whole snapshot, fails the recovery with an error
// that says why: the SKU answers UNAVAILABLE rather than start from a
// partial history.
func (s *Shell) restore() (*recovery.Result, error) {
	snaps := s.cfg.Snapshots
	if removed, err := snaps.RemoveTemp(); err != nil {
		return nil, err
	} else if len(removed) > 0 {
		s.logger.Warn("removed unfinished snapshot files", "files", removed)
	}
	res, err := recovery.Plan(s.log, snaps, recovery.Options{CampaignID: s.cfg.CampaignID, SKUID: s.cfg.SKUID})
	if res != nil {
		for _, st := range res.Snapshots {
			if st.Verdict != recovery.Usable && st.Verdict != recovery.Base {
				s.logger.Warn("snapshot not used", "path", st.Path, "index", st.Index, "status", st.Status)
			}
		}
	}
	if errors.Is(err, recovery.ErrNoBase) {
		return nil, fmt.Errorf("%w: restore a snapshot into %s (seckillctl restore) instead of starting empty", err, snaps)
	}
	if err != nil {
		return nil, err
	}
	if err := res.Machine.Counts().Check(res.Machine.Celled()); err != nil {
		return nil, fmt.Errorf("the state rebuilt from the snapshot at %d and the log does not balance: %w", res.Base.Index, err)
	}
	if res.Base.Path != "" {
		s.logger.Info("snapshot loaded", "path", res.Base.Path, "index", res.Base.Index,
			"replay_from", res.Base.Index+1, "log_last", res.LogLast, "replayed", res.Replayed)
	}
	return res, nil
}
