package actors

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/recovery"
	"github.com/seckill/seckill/wal"
)

// faultyStore fails WriteBatch or Sync from the failAt-th call on.
type faultyStore struct {
	wal.Store
	writes, syncs atomic.Int64
	failWriteAt   atomic.Int64 // 0: never
	failSyncAt    atomic.Int64
}

var errInjected = errors.New("injected I/O error")

// faultyConfig is a test engine on dir whose logs go through fs (each log
// opened replaces fs's inner store), with a fake clock and no tick loop
// (the test steps Engine.Tick); retry is its LogFailureRetry.
func faultyConfig(dir string, retry time.Duration) (cfg Config, fs *faultyStore, clock *fakeClock) {
	fs, clock = &faultyStore{}, &fakeClock{}
	clock.Set(t0)
	cfg = Config{DataDir: dir, Clock: clock.Now, ManualTick: true, Logger: quiet, LogFailureRetry: retry}
	cfg.WAL.OpenStore = func(dir string, o wal.StoreOptions) (wal.Store, error) {
		st, err := wal.OpenTidwallStore(dir, o)
		fs.Store = st
		return fs, err
	}
	return cfg, fs, clock
}

func (s *faultyStore) WriteBatch(b *wal.Batch) (int, error) {
	if n, at := s.writes.Add(1), s.failWriteAt.Load(); at > 0 && n >= at {
		return 0, errInjected
	}
	return s.Store.WriteBatch(b)
}

func (s *faultyStore) Sync() error {
	if n, at := s.syncs.Add(1), s.failSyncAt.Load(); at > 0 && n >= at {
		return errInjected
	}
	return s.Store.Sync()
}

// TestLogFailureStopsTheSKU injects a failed write or fsync on the Nth
// batch: the reserve in it gets no ACCEPTED but ErrResultUnknown (its
// record may be on disk), the SKU stops admitting (ErrUnavailable), and
// after a restart on the real store its state equals a replay of what is
// on disk (and every reserve acknowledged before the failure is there).
func TestLogFailureStopsTheSKU(t *testing.T) {
	for _, mode := range []string{"write", "sync"} {
		for _, n := range []int64{2, 5, 9} {
			t.Run(fmt.Sprintf("%s@%d", mode, n), func(t *testing.T) {
				dir := t.TempDir()
				d := testDef(100)
				cfg, fs, clock := faultyConfig(dir, -1)
				e, err := Open(cfg)
				if err != nil {
					t.Fatal(err)
				}
				if err := e.Define(ctxT(t), d); err != nil { // batch 1
					t.Fatal(err)
				}
				// Batch 1 was the definition: fail from batch n on.
				if mode == "write" {
					fs.failWriteAt.Store(fs.writes.Load() + n - 1)
				} else {
					fs.failSyncAt.Store(fs.syncs.Load() + n - 1)
				}
				var acked []string
				failedAt := -1
				for i := 0; i < 20; i++ { // one reserve per batch: each waits for its fsync
					res, err := e.Reserve(ctxT(t), "c1", "s1", fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i))
					if err != nil {
						// The reserve decided in the failing batch may be on
						// disk or not; those after it were never decided.
						want := ErrUnavailable
						if failedAt < 0 {
							failedAt, want = i, ErrResultUnknown
						}
						if !errors.Is(err, want) {
							t.Fatalf("reserve %d: %v, want %v", i, err, want)
						}
						continue
					}
					if failedAt >= 0 {
						t.Fatalf("reserve %d accepted after the log failed at %d", i, failedAt)
					}
					acked = append(acked, res.Reservation.ReservationID)
				}
				if failedAt != int(n)-2 {
					t.Fatalf("first failure at reserve %d, want %d", failedAt, n-2)
				}
				if st := e.SKU("c1", "s1").Stats(); !st.Unavailable {
					t.Fatal("SKU still reports itself available after a log failure")
				}
				e.Close()

				// Restart on the real store: the state is a replay of the disk.
				e2 := openTest(t, dir, clock, nil)
				a := mustAudit(t, e2)
				if int(a.Counts.Reservations) < len(acked) {
					t.Fatalf("%d reservations on disk, %d were acknowledged", a.Counts.Reservations, len(acked))
				}
				closeMatchingDisk(t, e2, dir, acked, "restart")
				e3 := openTest(t, dir, clock, nil)
				if res, err := e3.Reserve(ctxT(t), "c1", "s1", "after", "u-after"); err != nil || res.Outcome != sku.OutcomeAccepted {
					t.Fatalf("SKU not admitting after restart: %v %v", res.Outcome, err)
				}
			})
		}
	}
}

// replayDir replays a closed log into a fresh Machine.
func replayDir(t *testing.T, dir string) *sku.Machine {
	t.Helper()
	l, err := wal.Open(dir, wal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	m := sku.New()
	if _, err := recovery.Replay(l, m, l.FirstIndex()); err != nil {
		t.Fatal(err)
	}
	return m
}

// A caller whose context ends while its call waits on a hung disk gets
// ctx.Err() promptly, and the SKU goes on once the disk comes back.
func TestCallerContextEndsAWaitOnAHungDisk(t *testing.T) {
	e, _, fs, _ := gatedEngine(t, 0)
	fs.shut()

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(5*time.Millisecond, cancel)
	start := time.Now()
	if _, err := e.Reserve(ctx, "c1", "s1", "r1", "u1"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	// The disk stays hung: without the cancellation the call would never
	// return. A minute bounds it for a clear failure, however loaded the
	// machine.
	if took := time.Since(start); took > time.Minute {
		t.Fatalf("a cancellation took %v to end the wait", took)
	}

	start = time.Now() // before the deadline is set: the wait is at least 10 ms from here
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := e.Reserve(ctx, "c1", "s1", "r2", "u2"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: %v", err)
	}
	if took := time.Since(start); took < 10*time.Millisecond || took > time.Minute {
		t.Fatalf("a 10 ms deadline ended the wait after %v", took)
	}

	// A shared Deadline (the HTTP ingress's): its end abandons the call,
	// not a select in the caller.
	start = time.Now()
	dl := NewDeadline(start.Add(10 * time.Millisecond))
	if _, err := e.Reserve(dl, "c1", "s1", "r4", "u4"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a Deadline: %v", err)
	}
	if took := time.Since(start); took < 10*time.Millisecond || took > time.Minute {
		t.Fatalf("a 10 ms Deadline ended the wait after %v", took)
	}
	// A call made once the Deadline has ended returns at once.
	if _, err := e.Reserve(dl, "c1", "s1", "r5", "u5"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("an ended Deadline: %v", err)
	}

	fs.open()
	if res, err := e.Reserve(ctxT(t), "c1", "s1", "r3", "u3"); err != nil || res.Outcome != sku.OutcomeAccepted {
		t.Fatalf("after the disk came back: %v %v", res.Outcome, err)
	}
}

// A caller runs its SKU's actor only while the log is idle, so its run
// never waits for the disk: with a hung disk and a pending batch of one
// record, the appends that would block (the third here) block the
// mailbox's goroutine, never a caller, and every caller's Deadline still
// ends its wait.
func TestCallerRunNeverWaitsOnAHungDisk(t *testing.T) {
	e, _, fs, _ := gatedEngine(t, 0)
	fs.shut()
	for i := range 4 {
		done := make(chan error, 1)
		go func() {
			id := strconv.Itoa(i)
			_, err := e.Reserve(NewDeadline(time.Now().Add(10*time.Millisecond)), "c1", "s1", "r"+id, "u"+id)
			done <- err
		}()
		// A minute bounds the wait for a clear failure, however loaded
		// the machine.
		select {
		case err := <-done:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("reserve %d on a hung disk: %v", i, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("reserve %d waited past its deadline: its caller waits on the hung disk", i)
		}
	}
	fs.open()
	if res, err := e.Reserve(ctxT(t), "c1", "s1", "r9", "u9"); err != nil || res.Outcome != sku.OutcomeAccepted {
		t.Fatalf("after the disk came back: %v %v", res.Outcome, err)
	}
}

// A SKU whose log failed recovers from disk by itself once the cause is
// gone (a full disk freed): it answers UNAVAILABLE while the fault lasts,
// then admits again without an engine restart, with every acknowledged
// reservation kept and its state equal to a replay of the log.
func TestLogFailureHealsWithoutRestart(t *testing.T) {
	dir := t.TempDir()
	cfg, fs, clock := faultyConfig(dir, 20*time.Millisecond)
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.Define(ctxT(t), testDef(100)); err != nil {
		t.Fatal(err)
	}
	var acked []string
	reserve := func(i int) error {
		res, err := e.Reserve(ctxT(t), "c1", "s1", fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i))
		if err == nil && res.Outcome == sku.OutcomeAccepted {
			acked = append(acked, res.Reservation.ReservationID)
		}
		return err
	}
	for i := 0; i < 5; i++ {
		if err := reserve(i); err != nil {
			t.Fatal(err)
		}
	}
	fs.failWriteAt.Store(fs.writes.Load() + 1) // the disk is full from now on
	if err := reserve(5); !errors.Is(err, ErrResultUnknown) {
		t.Fatalf("reserve in the failing batch: %v", err)
	}
	// While the fault lasts, retries recover, fail on the next write and
	// back off; nothing is acknowledged.
	i := 6
	for range 10 { // 100 ms: recoveries at 20, 60 ms
		step(t, e, clock, 10*time.Millisecond)
		if err := reserve(i); err == nil {
			t.Fatalf("reserve %d acknowledged while the disk is full", i)
		}
		i++
	}
	fs.failWriteAt.Store(0)             // space freed
	for healed := false; !healed; i++ { // the next recovery is due at 140 ms
		if clock.Now().UnixMilli() > t0+140 {
			t.Fatal("no recovery 80 ms after the last one")
		}
		step(t, e, clock, 10*time.Millisecond)
		healed = reserve(i) == nil
	}
	if len(acked) != 6 {
		t.Fatalf("acknowledged %d reservations, want the 5 before the fault and 1 after it", len(acked))
	}
	closeMatchingDisk(t, e, dir, acked, "healing")
}

// On a disk that stays full, reopening the log succeeds and only the next
// write fails: the wait before each recovery must still double, not stay
// at its first value (a tester saw one full recovery a second, and every
// fourth request answered RESULT_UNKNOWN). Once a record appended after a
// recovery is durable, the wait starts again from LogFailureRetry.
func TestLogFailureBackoffDoublesWhileWritesFail(t *testing.T) {
	cfg, fs, clock := faultyConfig(t.TempDir(), 10*time.Millisecond)
	e := openWith(t, cfg)
	if err := e.Define(ctxT(t), testDef(100)); err != nil {
		t.Fatal(err)
	}
	// recoveries steps time by 10 ms up to until (ms after now) with a
	// request after each tick, and returns when (ms after now) each
	// recovery was: the request after it fails with RESULT_UNKNOWN (the
	// SKU took it, its write failed); while the SKU waits it answers
	// UNAVAILABLE.
	n := 0
	recoveries := func(until int64) (at []int64) {
		from := clock.Now().UnixMilli()
		for clock.Now().UnixMilli() < from+until {
			step(t, e, clock, 10*time.Millisecond)
			n++
			_, err := e.Reserve(ctxT(t), "c1", "s1", fmt.Sprintf("r%d", n), fmt.Sprintf("u%d", n))
			switch {
			case errors.Is(err, ErrResultUnknown):
				at = append(at, clock.Now().UnixMilli()-from)
			case !errors.Is(err, ErrUnavailable):
				t.Fatalf("reserve %d while the disk is full: %v", n, err)
			}
		}
		return at
	}
	fs.failWriteAt.Store(fs.writes.Load() + 1)
	if _, err := e.Reserve(ctxT(t), "c1", "s1", "r0", "u0"); !errors.Is(err, ErrResultUnknown) {
		t.Fatalf("reserve in the failing batch: %v", err)
	}
	// Failed at 0: waits of 10, 20, 40, 80, 160, 320 ms (64 recoveries
	// at a constant 10 ms).
	if at := recoveries(640); fmt.Sprint(at) != "[10 30 70 150 310 630]" {
		t.Fatalf("recoveries at %v ms of failing writes, want [10 30 70 150 310 630] (a doubling wait)", at)
	}
	// Space freed: the SKU heals at the next recovery, at 630 + 640 ms
	// (the window ended at 640).
	fs.failWriteAt.Store(0)
	step(t, e, clock, 620*time.Millisecond)
	if _, err := e.Reserve(ctxT(t), "c1", "s1", "early", "u-early"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("reserve 10 ms before the recovery is due: %v", err)
	}
	step(t, e, clock, 10*time.Millisecond)
	if _, err := e.Reserve(ctxT(t), "c1", "s1", "ok", "u-ok"); err != nil {
		t.Fatalf("reserve after the recovery, the disk freed: %v", err)
	}
	// Its record is durable: the next failure waits 10 ms again.
	fs.failWriteAt.Store(fs.writes.Load() + 1)
	if _, err := e.Reserve(ctxT(t), "c1", "s1", "fail-again", "u-fail-again"); !errors.Is(err, ErrResultUnknown) {
		t.Fatalf("reserve in the failing batch: %v", err)
	}
	if at := recoveries(30); fmt.Sprint(at) != "[10 30]" {
		t.Fatalf("after healing, recoveries at %v ms, want [10 30] (the wait reset)", at)
	}
}

// step advances clock by d, runs one engine Tick at the new time, and
// waits until every SKU has handled it (a call posted after the tick is
// handled after it: the same mailbox).
func step(t *testing.T, e *Engine, clock *fakeClock, d time.Duration) {
	t.Helper()
	clock.Set(clock.Now().Add(d).UnixMilli())
	e.Tick(clock.Now())
	for _, h := range e.SKUs() {
		c := newCall(core.KindLookup)
		if err := h.do(ctxT(t), c); err != nil {
			t.Fatal(err)
		}
		c.free()
	}
}

// After a failed fsync the SKU does not rebuild itself from the file: the
// page cache may show records the disk lost. It stays unavailable until
// the engine restarts, even once fsync works again.
func TestFsyncFailureWaitsForARestart(t *testing.T) {
	dir := t.TempDir()
	cfg, fs, clock := faultyConfig(dir, 10*time.Millisecond)
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Define(ctxT(t), testDef(100)); err != nil {
		t.Fatal(err)
	}
	fs.failSyncAt.Store(fs.syncs.Load() + 1)
	if _, err := e.Reserve(ctxT(t), "c1", "s1", "r0", "u0"); !errors.Is(err, ErrResultUnknown) {
		t.Fatalf("reserve in the batch whose fsync failed: %v", err)
	}
	if _, err := e.Reserve(ctxT(t), "c1", "s1", "r1", "u1"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("reserve after the fsync failure: %v", err)
	}
	// The SKU's error keeps its cause (wrapped, not flattened).
	if _, err := e.Snapshot(ctxT(t), "c1", "s1"); !errors.Is(err, ErrUnavailable) || !errors.Is(err, wal.ErrSyncFailed) {
		t.Fatalf("snapshot of a SKU whose fsync failed: %v", err)
	}
	fs.failSyncAt.Store(0)
	for range 20 { // 20 retry periods, each tick handled
		step(t, e, clock, 10*time.Millisecond)
	}
	if _, err := e.Reserve(ctxT(t), "c1", "s1", "r2", "u2"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("reserve after an fsync failure, without a restart: %v", err)
	}
	e.Close()
	e2 := openTest(t, dir, clock, nil)
	if res, err := e2.Reserve(ctxT(t), "c1", "s1", "r3", "u3"); err != nil || res.Outcome != sku.OutcomeAccepted {
		t.Fatalf("after a restart: %v %v", res.Outcome, err)
	}
}

// closeMatchingDisk checks that every acknowledged reservation of c1/s1 is
// there and pending after what (a restart, a self-recovery), closes e, and
// checks its state against a replay of the log in dir.
func closeMatchingDisk(t *testing.T, e *Engine, dir string, acked []string, what string) {
	t.Helper()
	for _, id := range acked {
		if v, err := e.Get(ctxT(t), id); err != nil || v.State != sku.StatePendingPayment {
			t.Fatalf("acknowledged %s after %s: %+v %v", id, what, v, err)
		}
	}
	live, err := e.StateHash(ctxT(t), "c1", "s1")
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	if replayDir(t, dir+"/c1/s1/wal").Hash() != live {
		t.Fatalf("state after %s differs from a replay of the log", what)
	}
}

// A SKU whose first recovery fails (a transient I/O error at start) is
// not left unavailable until a restart: it recovers again after
// LogFailureRetry, like after a log failure.
func TestFailedFirstRecoveryIsRetried(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{}
	clock.Set(t0)
	e := openTest(t, dir, clock, nil)
	if err := e.Define(ctxT(t), testDef(10)); err != nil {
		t.Fatal(err)
	}
	e.Close()

	var opens atomic.Int64
	cfg := Config{DataDir: dir, Clock: clock.Now, ManualTick: true, Logger: quiet, LogFailureRetry: time.Second}
	cfg.WAL.OpenStore = func(dir string, o wal.StoreOptions) (wal.Store, error) {
		if opens.Add(1) == 1 {
			return nil, errInjected
		}
		return wal.OpenTidwallStore(dir, o)
	}
	e = openWith(t, cfg)
	if _, err := e.Reserve(ctxT(t), "c1", "s1", "r1", "u1"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("reserve after a failed recovery: %v", err)
	}
	step(t, e, clock, 999*time.Millisecond)
	if opens.Load() != 1 {
		t.Fatalf("%d recoveries before LogFailureRetry passed", opens.Load())
	}
	step(t, e, clock, time.Millisecond)
	if res, err := e.Reserve(ctxT(t), "c1", "s1", "r2", "u2"); err != nil || res.Outcome != sku.OutcomeAccepted {
		t.Fatalf("reserve after the retried recovery: %v %v", res.Outcome, err)
	}
}

// A supervisor restart (a panic in the actor) is no restart of the
// engine: after a failed fsync the new incarnation stays unavailable too,
// rather than rebuilding the SKU from a file the page cache may show
// records of that the disk lost.
func TestFsyncFailureSurvivesAnActorRestart(t *testing.T) {
	cfg, fs, _ := faultyConfig(t.TempDir(), 10*time.Millisecond)
	e := openWith(t, cfg)
	if err := e.Define(ctxT(t), testDef(100)); err != nil {
		t.Fatal(err)
	}
	fs.failSyncAt.Store(fs.syncs.Load() + 1)
	if _, err := e.Reserve(ctxT(t), "c1", "s1", "r0", "u0"); !errors.Is(err, ErrResultUnknown) {
		t.Fatalf("reserve in the batch whose fsync failed: %v", err)
	}
	fs.failSyncAt.Store(0)
	h := e.SKU("c1", "s1")
	first, failedLog := h.incarnation.Load(), h.log.Load()
	// A call of an unknown kind makes the actor panic (see
	// TestActorRestartAfterPanicRecoversFromDisk); protoactor restarts it.
	bad := &call{Call: core.Call{Kind: core.Kind(200)}, done: make(chan struct{}, 1)}
	bad.Ref = bad
	postBatch(e, h, bad)
	<-bad.done
	for deadline := time.Now().Add(10 * time.Second); ; {
		if in := h.incarnation.Load(); in != nil && in != first {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the actor was not restarted after its panic")
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := e.Reserve(ctxT(t), "c1", "s1", "r1", "u1"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("reserve after an fsync failure and an actor restart: %v", err)
	}
	if _, err := e.Snapshot(ctxT(t), "c1", "s1"); !errors.Is(err, ErrUnavailable) || !errors.Is(err, wal.ErrSyncFailed) {
		t.Fatalf("snapshot after an fsync failure and an actor restart: %v", err)
	}
	if h.log.Load() != failedLog {
		t.Fatal("the restarted actor opened the log again")
	}
}
