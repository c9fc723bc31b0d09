package actors

import (
	"context"
	"errors"
	"time"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/shell"
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
type SnapshotInfo = shell.SnapshotInfo

// Snapshot writes a snapshot of one SKU now and returns once it is durable.
// The actor only freezes its state (copy on write, well under a
// millisecond per million reservations); a goroutine waits until the log is
// durable up to the snapshot's index, writes the file and prunes old
// snapshots, and the actor then truncates the log they no longer need.
// A snapshot already running when the call arrives is not reused: a new
// one starts after it. Errors: ErrUnknownSKU, ErrUnavailable, ErrClosed,
// ErrBusy (too many operators' requests wait for the SKU), ctx.Err(), or
// the I/O error of the write.
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
	req := &snapshotRequest{reply: make(chan snapshotAnswer, 1)}
	if err := h.requestSnapshot(req); err != nil {
		return SnapshotInfo{}, err
	}
	select {
	case r := <-req.reply:
		return r.info, r.err
	case <-ctx.Done():
		return SnapshotInfo{}, ctx.Err()
	}
}

// snapshotRequest asks a SKU's actor for a snapshot (Engine.Snapshot); it
// is the shell's SnapshotWaiter.
type snapshotRequest struct{ reply chan snapshotAnswer } // capacity 1

type snapshotAnswer struct {
	info SnapshotInfo
	err  error
}

// SnapshotDone implements shell.SnapshotWaiter: a SKU not defined yet is
// unknown to the caller.
func (r *snapshotRequest) SnapshotDone(info SnapshotInfo, err error) {
	if errors.Is(err, core.ErrUndefined) {
		err = ErrUnknownSKU
	}
	r.reply <- snapshotAnswer{info: info, err: err}
}
