package actors

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/wal"
)

// Snapshot files are written SnapshotWritersMax at a time over the whole
// engine (a snapshot waits for a writer), and logs truncated at most
// TruncationsMax at a time (with none free the records are kept until the
// next snapshot): their transient descriptors stay within the budget.
func TestSnapshotWritersAndTruncationsAreBounded(t *testing.T) {
	dir, clock := t.TempDir(), &fakeClock{}
	cfg := snapConfig(dir, clock)
	cfg.SnapshotEvery = -1 // only the snapshots asked for below
	e := openWith(t, cfg)
	if err := e.Define(ctxT(t), testDef(100_000)); err != nil {
		t.Fatal(err)
	}
	for range SnapshotWritersMax {
		e.cfg.snapshotWriters <- struct{}{}
	}
	history(t, e, clock, 0, 200)
	ctx, cancel := context.WithTimeout(ctxT(t), 50*time.Millisecond)
	defer cancel()
	if _, err := e.Snapshot(ctx, "c1", "s1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a snapshot with every writer busy: %v", err)
	}

	for range TruncationsMax {
		e.cfg.truncations <- struct{}{}
	}
	<-e.cfg.snapshotWriters // one writer free: the waiting snapshot is written
	log := e.SKU("c1", "s1").log.Load()
	for round := 1; round <= 3; round++ {
		history(t, e, clock, 200*round, 200*round+200)
		if _, err := e.Snapshot(ctxT(t), "c1", "s1"); err != nil {
			t.Fatal(err)
		}
	}
	// The third snapshot started after the second one's truncation was
	// tried (snapshots of a SKU run one at a time).
	if first := log.FirstIndex(); first != 1 {
		t.Fatalf("log truncated to %d with every truncation slot busy", first)
	}
	<-e.cfg.truncations
	history(t, e, clock, 800, 1000)
	if _, err := e.Snapshot(ctxT(t), "c1", "s1"); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() bool { return log.FirstIndex() > 1 })
}

// Open recovers at most RecoveriesMax SKUs at once: a data dir of
// thousands of SKUs must not open thousands of extra descriptors (and
// block as many threads in fsync) at start.
func TestOpenRecoversABoundedNumberAtOnce(t *testing.T) {
	dir := t.TempDir()
	e, err := openMax(t, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	const skus = 3 * RecoveriesMax
	for i := range skus {
		if err := e.Define(ctxT(t), defOf(fmt.Sprintf("s%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	e.Close()
	var mu sync.Mutex
	opening, most := 0, 0
	cfg := Config{DataDir: dir, ExpiryInterval: time.Hour, Logger: quiet}
	cfg.WAL.OpenStore = func(dir string, o wal.StoreOptions) (wal.Store, error) {
		mu.Lock()
		opening++
		most = max(most, opening)
		mu.Unlock()
		time.Sleep(2 * time.Millisecond) // a recovery takes a while
		mu.Lock()
		opening--
		mu.Unlock()
		return wal.OpenTidwallStore(dir, o)
	}
	e = openWith(t, cfg)
	if n := len(e.SKUs()); n != skus {
		t.Fatalf("%d SKUs recovered, want %d", n, skus)
	}
	if most > RecoveriesMax || most < 2 {
		t.Fatalf("%d SKUs recovering at once, want 2..%d", most, RecoveriesMax)
	}
}

// A SKU recovering after its log failed takes one of the engine's
// RecoveriesMax slots: with every log failing at once (a full disk), they
// do not all reopen their files at once.
func TestRecoveryAfterLogFailureTakesASlot(t *testing.T) {
	cfg, fs, clock := faultyConfig(t.TempDir(), 5*time.Millisecond)
	e := openWith(t, cfg)
	if err := e.Define(ctxT(t), testDef(100)); err != nil {
		t.Fatal(err)
	}
	for range RecoveriesMax {
		e.cfg.recoveries <- struct{}{}
	}
	fs.failWriteAt.Store(fs.writes.Load() + 1)
	if _, err := e.Reserve(ctxT(t), "c1", "s1", "r1", "u1"); !errors.Is(err, ErrResultUnknown) {
		t.Fatalf("reserve in the failing batch: %v", err)
	}
	// The next call finds the log failed: the SKU stops and schedules its
	// recovery.
	if _, err := e.Reserve(ctxT(t), "c1", "s1", "r2", "u2"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("reserve after the failure: %v", err)
	}
	fs.failWriteAt.Store(0) // the cause is gone at once...
	clock.Set(clock.Now().Add(5 * time.Millisecond).UnixMilli())
	e.Tick(clock.Now()) // the recovery is due
	eventually(t, func() bool { return strings.Contains(goroutines(), "recoverySlot") })
	if !e.SKU("c1", "s1").Stats().Unavailable {
		t.Fatal("the SKU recovered with every recovery slot taken")
	}
	<-e.cfg.recoveries // ...and it recovers once a slot is free
	eventually(t, func() bool { return !e.SKU("c1", "s1").Stats().Unavailable })
	if _, err := e.Reserve(ctxT(t), "c1", "s1", "r3", "u3"); err != nil {
		t.Fatal(err)
	}
}

// goroutines returns the stacks of every goroutine: a test sees there
// that one is blocked where it must wait.
func goroutines() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}
