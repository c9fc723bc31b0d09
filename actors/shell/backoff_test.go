package shell_test

import (
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/shell"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/snapshot"
	"github.com/seckill/seckill/wal"
)

// These tests drive a shell over a log on disk the way its hosts do (the
// actor, the simulator): each input with its time, the log's group commit
// stepped by the test (wal.Options.Stepped), a batch of one record so that
// an append commits the record before it, as the flusher of a running log
// commits a batch while the next one fills.

var t0 = time.UnixMilli(1_700_000_000_000)

var errDisk = errors.New("disk full")

// failingStore fails every WriteBatch once ok more have succeeded (ok
// negative: none fails), writing nothing: a write error, not a failed
// fsync, so the SKU recovers by itself.
type failingStore struct {
	wal.Store
	ok *int
}

func (s failingStore) WriteBatch(b *wal.Batch) (int, error) {
	if *s.ok == 0 {
		return 0, errDisk
	}
	if *s.ok > 0 {
		*s.ok--
	}
	return s.Store.WriteBatch(b)
}

// backoffHost is a shell's host that keeps the log failures its releases
// report, for the test to bring back (Shell.LogFailed).
type backoffHost struct {
	failures []error
	logs     []*wal.Log
}

func (h *backoffHost) Appending(*sku.Machine, uint64, []sku.Record) {}
func (h *backoffHost) Answer([]*core.Call)                          {}
func (h *backoffHost) Release(r *shell.Release) {
	if r.Failure != nil {
		h.failures, h.logs = append(h.failures, r.Failure), append(h.logs, r.Log)
	}
}
func (h *backoffHost) Ticked(int, int64)                      {}
func (h *backoffHost) Recovered(*shell.Recovery)              {}
func (h *backoffHost) Failed(error)                           {}
func (h *backoffHost) SnapshotWritten(shell.SnapshotInfo)     {}
func (h *backoffHost) SnapshotDone(shell.SnapshotInfo, error) {}
func (h *backoffHost) bringBack(t *testing.T, sh *shell.Shell, now time.Time) {
	t.Helper()
	if len(h.failures) == 0 {
		t.Fatal("no release reported the log's failure")
	}
	for i := range h.failures {
		sh.LogFailed(now, h.logs[i], h.failures[i])
	}
	h.failures, h.logs = nil, nil
}

// idleExecutor keeps the jobs: none is asked for here (no snapshot is due).
type idleExecutor struct{}

func (idleExecutor) Go(*shell.Job)                   {}
func (idleExecutor) After(time.Duration, *shell.Job) {}

type zeroRand struct{}

func (zeroRand) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// backoffShell is a shell over a log in a test folder whose writes fail
// once *ok more succeeded, defined and recovered at t0.
func backoffShell(t *testing.T, ok *int) (*shell.Shell, *backoffHost) {
	dir := filepath.Join(t.TempDir(), "wal")
	host := &backoffHost{}
	sh := shell.New(shell.Config{
		CampaignID: "c1", SKUID: "s1",
		Core: core.Config{Rand: zeroRand{}, LogFailureRetry: 2 * time.Second},
		OpenLog: func() (*wal.Log, error) {
			return wal.Open(dir, wal.Options{Stepped: true, MaxBatchRecords: 1, Logger: slog.New(slog.DiscardHandler),
				OpenStore: func(dir string, o wal.StoreOptions) (wal.Store, error) {
					s, err := wal.OpenTidwallStore(dir, o)
					if err != nil {
						return nil, err
					}
					return failingStore{Store: s, ok: ok}, nil
				}})
		},
		Snapshots: &snapshot.Memory{},
		Executor:  idleExecutor{},
		Host:      host,
	})
	t.Cleanup(sh.Stop)
	if err := sh.Recover(t0); err != nil {
		t.Fatal(err)
	}
	sh.Decide(t0, &core.Call{Kind: core.KindDefine, Def: &sku.Definition{CampaignID: "c1", SKUID: "s1",
		StartAt: t0.UnixMilli(), EndAt: t0.Add(24 * time.Hour).UnixMilli(), PaymentWindowMs: 60_000, SaleLimit: 100}})
	sh.Commit(t0)
	if err := flush(t, sh); err != nil {
		t.Fatal(err)
	}
	return sh, host
}

// flush steps the log's group commit (the flusher of a running log).
func flush(t *testing.T, sh *shell.Shell) error {
	t.Helper()
	return sh.Log().Flush()
}

// reserve decides a reserve per request id at now, as one round.
func reserve(sh *shell.Shell, now time.Time, requestIDs ...string) {
	for _, id := range requestIDs {
		sh.Decide(now, &core.Call{Kind: core.KindReserve, RequestID: id, UserID: "u-" + id})
	}
	sh.Commit(now)
}

// failAndRecover fails the SKU's log at now (its first failure: a
// recovery due 2 s later) and recovers it then, the store healed.
func failAndRecover(t *testing.T, sh *shell.Shell, host *backoffHost, ok *int, now time.Time) time.Time {
	t.Helper()
	*ok = 0
	reserve(sh, now, "before")
	if err := flush(t, sh); err == nil {
		t.Fatal("the flush did not fail")
	}
	host.bringBack(t, sh, now)
	if at, armed := sh.Core().RetryAt(); !armed || !at.Equal(now.Add(2*time.Second)) {
		t.Fatalf("after the first failure a recovery is due at %v (armed %v), want 2 s later", at, armed)
	}
	*ok = -1
	now = now.Add(2 * time.Second)
	sh.Tick(now)
	if sh.Failed() != nil {
		t.Fatalf("not recovered at the retry: %v", sh.Failed())
	}
	return now
}

// A record appended after a recovery that became durable ends the
// backoff: a failure of the next batch, already queued, is a first
// failure again (2 s), though no input came between the flush that made
// the record durable and the failure's report (Shell.LogFailed).
func TestBackoffEndsWhenAQueuedBatchFailsAfterADurableOne(t *testing.T) {
	ok := -1
	sh, host := backoffShell(t, &ok)
	now := failAndRecover(t, sh, host, &ok, t0.Add(time.Second))
	last := sh.Log().LastIndex()
	reserve(sh, now, "a") // record last+1, pending
	ok = 1
	reserve(sh, now, "b") // commits record last+1 (a full batch), then waits on last+2
	if d := sh.Log().DurableIndex(); d != last+1 {
		t.Fatalf("the log is durable to %d, want %d (the first record after the recovery)", d, last+1)
	}
	if err := flush(t, sh); err == nil { // record last+2 fails
		t.Fatal("the flush did not fail")
	}
	failedAt := now.Add(time.Second)
	host.bringBack(t, sh, failedAt)
	if at, armed := sh.Core().RetryAt(); !armed || !at.Equal(failedAt.Add(2*time.Second)) {
		t.Fatalf("a failure after a record appended since the recovery was durable: recovery due %v after it (armed %v), want 2s",
			at.Sub(failedAt), armed)
	}
}

// The same within one round: a round's append that fails after the log
// committed an earlier record of the round (the flusher runs meanwhile) is
// a first failure again.
func TestBackoffEndsWhenARoundFailsAfterADurableRecord(t *testing.T) {
	ok := -1
	sh, host := backoffShell(t, &ok)
	now := failAndRecover(t, sh, host, &ok, t0.Add(time.Second))
	last := sh.Log().LastIndex()
	ok = 1
	failedAt := now.Add(time.Second)
	// Record last+1 is committed by the append of last+2, whose commit
	// fails the append of last+3.
	reserve(sh, failedAt, "a", "b", "c")
	if sh.Failed() == nil {
		t.Fatal("the round's append did not fail")
	}
	if d := sh.Log().DurableIndex(); d != last+1 {
		t.Fatalf("the log is durable to %d, want %d (the first record after the recovery)", d, last+1)
	}
	if at, armed := sh.Core().RetryAt(); !armed || !at.Equal(failedAt.Add(2*time.Second)) {
		t.Fatalf("a failure after a record appended since the recovery was durable: recovery due %v after it (armed %v), want 2s",
			at.Sub(failedAt), armed)
	}
}
