package core

import (
	"time"

	"github.com/seckill/seckill/actors/sku"
)

// Snapshot is a snapshot the shell must write: the state as of the record
// at Index, frozen (copy on write). Write it only once the log is durable
// up to Index, so a snapshot never runs ahead of the log; then report
// SnapshotDone.
type Snapshot struct {
	Index  uint64
	Frozen *sku.Frozen
}

// snapshots is the core's snapshot schedule.
type snapshots struct {
	index     uint64    // of the newest durable snapshot, or the one recovery started from
	at        time.Time // when it was written (or recovery finished)
	notBefore time.Time // no automatic snapshot before (after a failure)
	running   bool      // a snapshot was started and is not done
	requested bool      // one was asked for while another ran: start it after
}

// RequestSnapshot asks for a snapshot now (an operator's or a test's). It
// returns the snapshot to write, or nil when one is running: a new one then
// starts after it (SnapshotDone). Errors: Failed() while the SKU is
// failed, ErrUndefined before its definition. Call it between rounds.
func (c *Core) RequestSnapshot() (*Snapshot, error) {
	switch {
	case c.failed != nil:
		return nil, c.failed
	case !c.m.Defined():
		return nil, ErrUndefined
	case c.snap.running:
		c.snap.requested = true
		return nil, nil
	}
	return c.startSnapshot(), nil
}

// startSnapshot freezes the state at the last index appended.
func (c *Core) startSnapshot() *Snapshot {
	if len(c.round.records) > 0 {
		panic("core: a snapshot started with records not appended")
	}
	c.snap.running = true
	return &Snapshot{Index: c.lastIndex, Frozen: c.m.Freeze()}
}

// snapshotDue starts an automatic snapshot when SnapshotEvery records or
// SnapshotInterval have passed since the last one; nil otherwise.
func (c *Core) snapshotDue(now time.Time) *Snapshot {
	s := &c.snap
	if s.running || c.failed != nil || !c.m.Defined() || c.lastIndex <= s.index || now.Before(s.notBefore) {
		return nil
	}
	pending := c.lastIndex - s.index
	every, interval := c.cfg.SnapshotEvery, c.cfg.SnapshotInterval
	if (every > 0 && pending >= every) || (interval > 0 && now.Sub(s.at) >= interval) {
		return c.startSnapshot()
	}
	return nil
}

// SnapshotDone reports at now that the snapshot at index was written (err
// nil) or failed; after a failure no automatic snapshot is due for
// SnapshotRetryAfter. A snapshot requested meanwhile starts now
// (Actions.Snapshot), or is refused (Actions.SnapshotRefused) when the SKU
// failed meanwhile.
func (c *Core) SnapshotDone(now time.Time, index uint64, err error) *Actions {
	s := &c.snap
	s.running = false
	if err != nil {
		s.notBefore = now.Add(c.cfg.SnapshotRetryAfter)
	} else {
		s.index, s.at = index, now
	}
	out := &c.output
	*out = Actions{}
	if s.requested {
		s.requested = false
		if c.failed != nil {
			out.SnapshotRefused = c.failed
		} else {
			out.Snapshot = c.startSnapshot()
		}
	}
	return out
}
