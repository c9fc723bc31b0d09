package actors

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/snapshot"
	"github.com/seckill/seckill/wal"
)

// snapConfig is a test engine that snapshots every 64 records, ticks
// every 5 ms and cuts the log into 4 KiB segments, so truncation happens.
func snapConfig(dir string, clock *fakeClock) Config {
	if clock.ms.Load() == 0 {
		clock.Set(t0)
	}
	return Config{DataDir: dir, Clock: clock.Now, Logger: quiet, ExpiryInterval: 5 * time.Millisecond, Rand: fixedRand{},
		SnapshotEvery: 64, SnapshotInterval: -1, WAL: wal.Options{SegmentSize: 4 << 10}}
}

func openWith(t *testing.T, cfg Config) *Engine {
	t.Helper()
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// history runs a fixed mix of commands: reserves (some sold out), pays,
// cancels and a pause.
func history(t *testing.T, e *Engine, clock *fakeClock, from, to int) {
	t.Helper()
	ctx := ctxT(t)
	for i := from; i < to; i++ {
		clock.Set(t0 + int64(i)*10)
		res, err := e.Reserve(ctx, "c1", "s1", fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i%997))
		if err != nil {
			t.Fatal(err)
		}
		id := res.Reservation.ReservationID
		switch {
		case res.Outcome != sku.OutcomeAccepted:
		case i%3 == 0:
			_, err = e.Pay(ctx, id, fmt.Sprintf("p%d", i), 990)
		case i%5 == 0:
			_, err = e.Cancel(ctx, id)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func stateHash(t *testing.T, e *Engine) [32]byte {
	t.Helper()
	h, err := e.StateHash(ctxT(t), "c1", "s1")
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func snapshotFiles(t *testing.T, dir string) []snapshot.File {
	t.Helper()
	files, err := snapshot.List(filepath.Join(dir, "c1", "s1", "snapshots"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// Automatic snapshots keep K files and truncate the log; after a restart
// the state (snapshot + tail) equals that of an engine that never took a
// snapshot and replays its whole log, and record indexes continue.
func TestSnapshotsTruncateAndRestoreSameState(t *testing.T) {
	dir, plainDir := t.TempDir(), t.TempDir()
	clock, plainClock := &fakeClock{}, &fakeClock{}
	d := testDef(700)
	e := openWith(t, snapConfig(dir, clock))
	plainCfg := Config{DataDir: plainDir, Clock: plainClock.Now, Logger: quiet, ExpiryInterval: time.Hour, SnapshotEvery: -1, SnapshotInterval: -1, Rand: fixedRand{}}
	plainClock.Set(t0)
	plain := openWith(t, plainCfg)
	for _, en := range []*Engine{e, plain} {
		if err := en.Define(ctxT(t), d); err != nil {
			t.Fatal(err)
		}
	}
	history(t, e, clock, 0, 1000)
	history(t, plain, plainClock, 0, 1000)
	info, err := e.Snapshot(ctxT(t), "c1", "s1")
	if err != nil {
		t.Fatal(err)
	}
	log := e.SKU("c1", "s1").log.Load()
	if info.Index != log.LastIndex() || info.Reservations != e.SKU("c1", "s1").Stats().Counts.Reservations || info.Bytes <= 0 || info.Pause <= 0 || info.Took < info.Pause {
		t.Fatalf("snapshot info %+v, log last %d", info, log.LastIndex())
	}
	eventually(t, func() bool { return len(snapshotFiles(t, dir)) == 2 && log.FirstIndex() > 1 })
	files := snapshotFiles(t, dir)
	if first := log.FirstIndex(); first > files[0].Index+1 {
		t.Fatalf("log starts at %d, after the oldest snapshot kept (%d)", first, files[0].Index)
	}
	want, last := stateHash(t, e), log.LastIndex()
	if want != stateHash(t, plain) {
		t.Fatal("snapshotting engine and plain engine differ before restart")
	}
	e.Close()

	e = openWith(t, snapConfig(dir, clock))
	if got := stateHash(t, e); got != want {
		t.Fatal("state after restart (snapshot + tail) differs")
	}
	res, err := e.Reserve(ctxT(t), "c1", "s1", "after-restart", "u-new")
	if err != nil || res.Outcome != sku.OutcomeSoldOut {
		t.Fatalf("reserve after restart: %v %v", res.Outcome, err)
	}
	if got := e.SKU("c1", "s1").log.Load().LastIndex(); got != last+1 {
		t.Fatalf("next record index %d, want %d", got, last+1)
	}
	mustAudit(t, e)
}

func eventually(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A damaged newest snapshot is reported and the previous one used, with a
// longer replay; the state is the same.
func TestCorruptNewestSnapshotFallsBack(t *testing.T) {
	dir, clock := t.TempDir(), &fakeClock{}
	cfg := snapConfig(dir, clock)
	cfg.SnapshotEvery, cfg.WAL = -1, wal.Options{}
	d := testDef(500)
	e := openWith(t, cfg)
	if err := e.Define(ctxT(t), d); err != nil {
		t.Fatal(err)
	}
	history(t, e, clock, 0, 200)
	older, err := e.Snapshot(ctxT(t), "c1", "s1")
	if err != nil {
		t.Fatal(err)
	}
	history(t, e, clock, 200, 400)
	newer, err := e.Snapshot(ctxT(t), "c1", "s1")
	if err != nil {
		t.Fatal(err)
	}
	want := stateHash(t, e)
	e.Close()

	b, err := os.ReadFile(newer.Path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-100] ^= 0x10
	if err := os.WriteFile(newer.Path, b, 0o640); err != nil {
		t.Fatal(err)
	}
	var logged lockedLog
	cfg.Logger = textLogger(&logged)
	e = openWith(t, cfg)
	if got := stateHash(t, e); got != want {
		t.Fatal("state after falling back differs")
	}
	if !strings.Contains(logged.String(), "snapshot not used") || !strings.Contains(logged.String(), filepath.Base(newer.Path)) ||
		!strings.Contains(logged.String(), fmt.Sprintf("index=%d", older.Index)) {
		t.Fatalf("fallback not reported:\n%s", logged.String())
	}
}

// With the log truncated and no usable snapshot, the SKU refuses to start
// (UNAVAILABLE, with a message that says why) instead of starting empty.
func TestTruncatedLogWithoutSnapshotRefusesToStart(t *testing.T) {
	dir, clock := t.TempDir(), &fakeClock{}
	cfg := snapConfig(dir, clock)
	d := testDef(700)
	e := openWith(t, cfg)
	if err := e.Define(ctxT(t), d); err != nil {
		t.Fatal(err)
	}
	history(t, e, clock, 0, 600)
	log := e.SKU("c1", "s1").log.Load()
	eventually(t, func() bool { return log.FirstIndex() > 1 })
	e.Close()
	for _, f := range snapshotFiles(t, dir) {
		b, _ := os.ReadFile(f.Path)
		os.WriteFile(f.Path, b[:len(b)/2], 0o640) // torn
	}
	var logged lockedLog
	cfg.Logger = textLogger(&logged)
	e = openWith(t, cfg)
	if _, err := e.Reserve(ctxT(t), "c1", "s1", "r-x", "u-x"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("reserve on a SKU without its history: %v", err)
	}
	if _, err := e.Snapshot(ctxT(t), "c1", "s1"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("snapshot of an unavailable SKU: %v", err)
	}
	if !strings.Contains(logged.String(), "no usable snapshot") || !strings.Contains(logged.String(), "seckillctl restore") {
		t.Fatalf("refusal not explained:\n%s", logged.String())
	}
}

// snapshotted is a closed engine's data dir after a definition, the
// history of requests 0..n and a snapshot taken then, then requests
// n..after; cfg opens it again (no automatic snapshots, one segment).
func snapshotted(t *testing.T, n, after int) (dir string, cfg Config, snap SnapshotInfo) {
	t.Helper()
	dir, clock := t.TempDir(), &fakeClock{}
	cfg = snapConfig(dir, clock)
	cfg.SnapshotEvery, cfg.WAL = -1, wal.Options{}
	e := openWith(t, cfg)
	if err := e.Define(ctxT(t), testDef(500)); err != nil {
		t.Fatal(err)
	}
	history(t, e, clock, 0, n)
	snap, err := e.Snapshot(ctxT(t), "c1", "s1")
	if err != nil {
		t.Fatal(err)
	}
	history(t, e, clock, n, after)
	e.Close()
	return dir, cfg, snap
}

// A whole snapshot taken at a record the log no longer reaches proves
// that durable records were lost (a truncated or deleted segment): the
// SKU refuses to start (UNAVAILABLE, saying why) instead of replaying the
// shorter log and selling the lost reservations' units again.
func TestShortLogBehindASnapshotRefusesToStart(t *testing.T) {
	for _, damage := range []string{"truncated", "deleted"} {
		t.Run(damage, func(t *testing.T) {
			dir, cfg, snap := snapshotted(t, 200, 300)
			segs, err := wal.Segments(filepath.Join(dir, "c1", "s1", "wal"))
			if err != nil || len(segs) != 1 {
				t.Fatalf("segments: %v %v", segs, err)
			}
			if damage == "truncated" {
				var st os.FileInfo
				if st, err = os.Stat(segs[0].Path); err == nil {
					err = os.Truncate(segs[0].Path, st.Size()/3)
				}
			} else {
				err = os.Remove(segs[0].Path)
			}
			if err != nil {
				t.Fatal(err)
			}
			var logged lockedLog
			cfg.Logger = textLogger(&logged)
			e := openWith(t, cfg)
			if _, err := e.Reserve(ctxT(t), "c1", "s1", "r-x", "u-x"); !errors.Is(err, ErrUnavailable) {
				t.Fatalf("reserve on a SKU whose log lost records: %v", err)
			}
			if !strings.Contains(logged.String(), "durable records are missing from the log") ||
				!strings.Contains(logged.String(), fmt.Sprintf("taken at record %d", snap.Index)) {
				t.Fatalf("refusal not explained:\n%s", logged.String())
			}
		})
	}
}

func TestSnapshotErrors(t *testing.T) {
	e := openTest(t, t.TempDir(), &fakeClock{}, nil)
	if _, err := e.Snapshot(ctxT(t), "c1", "nope"); !errors.Is(err, ErrUnknownSKU) {
		t.Fatalf("unknown SKU: %v", err)
	}
	e.Close()
	if _, err := e.Snapshot(ctxT(t), "c1", "s1"); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed engine: %v", err)
	}
}

// lockedLog collects log lines from any goroutine.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func textLogger(w *lockedLog) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// A SKU folder whose wal folder is gone but whose snapshots remain is a
// SKU with a lost history: it is found at start and answers UNAVAILABLE,
// not forgotten (404) nor started empty.
func TestLostWALFolderIsNotForgotten(t *testing.T) {
	dir, cfg, _ := snapshotted(t, 100, 100)
	if err := os.RemoveAll(filepath.Join(dir, "c1", "s1", "wal")); err != nil {
		t.Fatal(err)
	}
	var logged lockedLog
	cfg.Logger = textLogger(&logged)
	e := openWith(t, cfg)
	if e.SKU("c1", "s1") == nil && !strings.Contains(logged.String(), "durable records are missing") {
		t.Fatalf("the SKU was forgotten:\n%s", logged.String())
	}
	if _, err := e.Reserve(ctxT(t), "c1", "s1", "r-x", "u-x"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("reserve on a SKU whose log is gone: %v", err)
	}
	if err := e.Define(ctxT(t), testDef(500)); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("redefining a SKU whose log is gone: %v", err)
	}
}

// A snapshot of another SKU in a SKU's snapshots folder (a file copied
// into the wrong folder) is not one of the SKU's snapshots: recovery
// passes over it (recovery.OtherSKU), so pruning must not count it among
// those kept, or the SKU's own snapshot is removed, the log truncated up
// to the foreign file's index, and the next start finds no base for the
// SKU's history.
func TestForeignSnapshotIsNotKeptInsteadOfTheSKUs(t *testing.T) {
	dir, clock := t.TempDir(), &fakeClock{}
	cfg := snapConfig(dir, clock)
	cfg.SnapshotEvery, cfg.SnapshotKeep = -1, 1
	e := openWith(t, cfg)
	other := testDef(10)
	other.SKUID = "s2"
	for _, d := range []sku.Definition{testDef(700), other} {
		if err := e.Define(ctxT(t), d); err != nil {
			t.Fatal(err)
		}
	}
	foreign, err := e.Snapshot(ctxT(t), "c1", "s2")
	if err != nil {
		t.Fatal(err)
	}
	_, m, err := snapshot.Read(foreign.Path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.Write(filepath.Join(dir, "c1", "s1", "snapshots"), m.Freeze(), 1_000_000, snapshot.Options{}); err != nil {
		t.Fatal(err)
	}
	history(t, e, clock, 0, 1000)
	if _, err := e.Snapshot(ctxT(t), "c1", "s1"); err != nil {
		t.Fatal(err)
	}
	want := stateHash(t, e)
	e.Close()

	e = openWith(t, cfg)
	if got, err := e.StateHash(ctxT(t), "c1", "s1"); err != nil || got != want {
		t.Fatalf("after a restart beside a foreign snapshot: %v (state equal: %v)", err, got == want)
	}
}
