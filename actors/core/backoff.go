package core

import (
	"errors"
	"fmt"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/wal"
)

// backoff schedules the recoveries of a failed SKU. After a write error
// the SKU stops (its Machine may hold decisions that are not on disk); it
// does not stay stopped until the process restarts: a recovery from disk
// (newest usable snapshot + replay, as at a restart) is due wait after the
// failure, so a transient cause (a full disk freed, a permission restored)
// heals without a restart. The wait doubles, up to MaxLogFailureRetry, at
// each further failure until the SKU is healthy again: a record appended
// after a recovery is durable. (Reopening a log on a full disk succeeds;
// only the next write fails, so a recovery alone does not end the backoff.)
type backoff struct {
	wait      time.Duration // the current wait; 0: healthy
	at        time.Time     // when the armed recovery is due
	armed     bool          // a recovery is due at at
	healthyAt uint64        // the index whose durability ends the backoff
	never     bool          // an fsync failed: no recovery before a restart
}

// due reports whether an armed recovery is due at now.
func (b *backoff) due(now time.Time) bool { return b.armed && !now.Before(b.at) }

// fail makes the SKU fail-stop at now because of err (a failed append,
// truncation or recovery) and arms the next recovery, once.
func (c *Core) fail(now time.Time, err error) {
	if !errors.Is(err, ErrUnavailable) {
		err = fmt.Errorf("%w: log failed: %w", ErrUnavailable, err)
	}
	c.failed = err
	b := &c.backoff
	if errors.Is(err, wal.ErrSyncFailed) && !mutantHealFsync {
		// The page cache may hold records the disk lost: rebuilding from
		// the file could acknowledge on top of them.
		b.never, b.armed = true, false
	}
	if b.never || c.cfg.LogFailureRetry <= 0 || b.armed {
		return
	}
	if b.wait == 0 {
		b.wait = c.cfg.LogFailureRetry
	} else {
		b.wait = min(2*b.wait, MaxLogFailureRetry)
	}
	b.at, b.armed = now.Add(b.wait), true
}

// LogFailed reports a log failure seen outside a round (a failed
// truncation, a failed log the shell noticed) at now: the SKU fails as if
// an append had failed.
func (c *Core) LogFailed(now time.Time, err error) {
	if c.failed == nil {
		c.fail(now, err)
	}
}

// RecoveryFailed reports that rebuilding the Machine from disk failed at
// now (the first recovery or a later one). The SKU stays unavailable with
// err (wrapped in ErrUnavailable) and the next recovery is armed, the wait
// doubled; a Tick at or after it sets Actions.Recover.
func (c *Core) RecoveryFailed(now time.Time, err error) {
	c.fail(now, fmt.Errorf("%w: %w", ErrUnavailable, err))
}

// Recovered reports that the shell rebuilt the Machine from disk at now:
// m is the state after replay, lastIndex the log's last index, and
// snapshotIndex the index of the snapshot recovery started from (0: none).
// The SKU is healthy again; the backoff ends once a record appended from
// here on is durable (Durable). Any round in progress is dropped.
func (c *Core) Recovered(now time.Time, m *sku.Machine, lastIndex, snapshotIndex uint64) {
	c.m, c.lastIndex, c.failed = m, lastIndex, nil
	c.endRound()
	c.backoff.armed = false
	c.backoff.healthyAt = lastIndex + 1
	c.snap = snapshots{index: snapshotIndex, at: now}
	c.draw = ranking{} // a pending draw is ranked again from the recovered state
}

// RetryAt returns when the next recovery is due, and false when none is
// armed (healthy, LogFailureRetry off, or an fsync failed).
func (c *Core) RetryAt() (time.Time, bool) { return c.backoff.at, c.backoff.armed }

// Durable reports that the log is durable up to index: once that covers a
// record appended after the last recovery, the backoff ends.
func (c *Core) Durable(index uint64) {
	b := &c.backoff
	if b.wait > 0 && !b.armed && c.failed == nil && index >= b.healthyAt {
		b.wait = 0
	}
}
