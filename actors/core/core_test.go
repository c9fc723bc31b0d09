package core

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/wal"
)

// These tests drive the core the way a shell does, with no goroutine and
// no clock: each step gives the time, and the test plays the log.

var t0 = time.UnixMilli(1_700_000_000_000)

// at is t0 plus ms milliseconds.
func at(ms int64) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// zeroRand gives every SKU the same reservation id key.
type zeroRand struct{}

func (zeroRand) Read(p []byte) (int, error) { clear(p); return len(p), nil }

var errDisk = errors.New("disk full")

func def(limit uint32) sku.Definition {
	return sku.Definition{CampaignID: "c1", SKUID: "s1", StartAt: t0.UnixMilli(), EndAt: at(86_400_000).UnixMilli(),
		PaymentWindowMs: 60_000, SaleLimit: limit, ReleaseOnClose: true}
}

// recovered returns a core recovered from an empty log, with d defined
// and appended (record 1) if d is not nil.
func recovered(t *testing.T, cfg Config, d *sku.Definition) *Core {
	t.Helper()
	cfg.Rand = zeroRand{}
	c := New(cfg)
	c.Recovered(t0, sku.New(), 0, 0)
	if d != nil {
		call := &Call{Kind: KindDefine, Def: d}
		c.Decide(t0, call)
		if act := commit(t, c, nil); call.Err != nil || act.Wait == nil || act.Wait.Index != 1 {
			t.Fatalf("define: %v %+v", call.Err, act.Wait)
		}
	}
	return c
}

// commit plays the log for one round: every record of Ready is appended
// (appended = -1), or the first n are and then fail fails.
func commit(t *testing.T, c *Core, fail error, n ...int) *Actions {
	t.Helper()
	rd := c.Ready()
	if rd.FirstIndex != c.LastIndex()+1 {
		t.Fatalf("Ready.FirstIndex %d after LastIndex %d", rd.FirstIndex, c.LastIndex())
	}
	appended := len(rd.Records)
	if fail != nil {
		appended = n[0]
	}
	return c.Advance(appended, fail)
}

func reserve(r, u string) *Call { return &Call{Kind: KindReserve, RequestID: r, UserID: u} }

func TestDecideAppendsAndWaitsForTheLastRecord(t *testing.T) {
	c := recovered(t, Config{}, ptr(def(1)))
	a, b, read := reserve("r1", "u1"), reserve("r2", "u2"), &Call{Kind: KindLookup, RequestID: "r1"}
	c.Decide(at(1), a)
	c.Decide(at(1), b)
	c.Decide(at(1), read)
	rd := c.Ready()
	if rd.FirstIndex != 2 || len(rd.Records) != 2 {
		t.Fatalf("Ready: first %d, %d records; want 2 and 2 (ACCEPTED, recorded SOLD_OUT)", rd.FirstIndex, len(rd.Records))
	}
	act := c.Advance(2, nil)
	if len(act.Answer) != 0 || act.Wait == nil || act.Wait.Index != 3 || len(act.Wait.Calls) != 3 {
		t.Fatalf("actions %+v", act)
	}
	if a.Result.Outcome != sku.OutcomeAccepted || b.Result.Outcome != sku.OutcomeSoldOut || !read.Found || !a.Wrote || read.Wrote {
		t.Fatalf("decided %s %s found=%v", a.Result.Outcome, b.Result.Outcome, read.Found)
	}
	// A repeat writes nothing, and rests on the records before it (not
	// durable yet for all the core knows): it waits for index 3.
	again := reserve("r2", "u2")
	c.Decide(at(2), again)
	act = commit(t, c, nil)
	if !again.Result.Duplicate || again.Wrote || act.Wait == nil || act.Wait.Index != 3 || act.Wait.Calls[0] != again {
		t.Fatalf("repeat: %+v wrote=%v, wait %+v", again.Result, again.Wrote, act.Wait)
	}
	if c.LastIndex() != 3 {
		t.Fatalf("LastIndex %d, want 3", c.LastIndex())
	}
}

func ptr[T any](v T) *T { return &v }

// A failed append answers every call of the round at once: those resting
// on records appended before the failure RESULT_UNKNOWN if they wrote,
// UNAVAILABLE if not; those decided after the failing record UNAVAILABLE.
// Later calls are refused without being decided.
func TestFailedAppendAnswersTheRound(t *testing.T) {
	c := recovered(t, Config{LogFailureRetry: -1}, ptr(def(10)))
	w1, read, w2, w3 := reserve("r1", "u1"), &Call{Kind: KindLookup, RequestID: "r1"}, reserve("r2", "u2"), reserve("r3", "u3")
	for _, call := range []*Call{w1, read, w2, w3} {
		c.Decide(at(1), call)
	}
	act := commit(t, c, errDisk, 1) // record 2 (w1) appended, w2's failed
	if act.Wait != nil || len(act.Answer) != 4 {
		t.Fatalf("after a failed append: %d answered, wait %+v", len(act.Answer), act.Wait)
	}
	for call, want := range map[*Call]error{w1: ErrResultUnknown, read: ErrUnavailable, w2: ErrUnavailable, w3: ErrUnavailable} {
		if !errors.Is(call.Err, want) {
			t.Errorf("%s %s: %v, want %v", call.Kind, call.RequestID, call.Err, want)
		}
	}
	// The operator reading a result unknown learns why the log failed.
	if !strings.Contains(w1.Err.Error(), errDisk.Error()) {
		t.Errorf("result unknown %q, want the log's error %q in it", w1.Err, errDisk)
	}
	if !errors.Is(c.Failed(), ErrUnavailable) || !errors.Is(c.Failed(), errDisk) || c.LastIndex() != 2 {
		t.Fatalf("Failed() %v, LastIndex %d", c.Failed(), c.LastIndex())
	}
	later := reserve("r4", "u4")
	c.Decide(at(2), later)
	act = commit(t, c, nil)
	if len(act.Answer) != 1 || !errors.Is(later.Err, ErrUnavailable) || later.Result.Outcome != sku.OutcomeNone {
		t.Fatalf("a call to the failed SKU: %v %s", later.Err, later.Result.Outcome)
	}
	if _, armed := c.RetryAt(); armed {
		t.Fatal("a recovery armed with LogFailureRetry off")
	}
}

// The backoff script: waits of 10, 20, 40 ... ms, capped, while failures
// follow recoveries; back to 10 ms once a record appended after a recovery
// is durable.
func TestRecoveryBackoff(t *testing.T) {
	c := recovered(t, Config{LogFailureRetry: 10 * time.Millisecond}, ptr(def(10)))
	now := int64(0)
	failAt := func(ms int64) {
		now = ms
		c.Decide(at(ms), reserve(fmt.Sprint("r", ms), fmt.Sprint("u", ms)))
		commit(t, c, errDisk, 0)
	}
	// recoverAt ticks 1 ms before due (nothing) and at due (Recover).
	recoverAt := func(due int64) {
		t.Helper()
		if retry, armed := c.RetryAt(); !armed || !retry.Equal(at(due)) {
			t.Fatalf("retry at %v (armed %v), want %v", retry.Sub(t0), armed, at(due).Sub(t0))
		}
		c.Tick(at(due - 1))
		if commit(t, c, nil).Recover {
			t.Fatalf("recovery at %d ms, due at %d", due-1, due)
		}
		c.Tick(at(due))
		if !commit(t, c, nil).Recover {
			t.Fatalf("no recovery at %d ms", due)
		}
		now = due
	}
	failAt(0)
	want := int64(10)
	for range 15 {
		recoverAt(now + want)
		c.Recovered(at(now), c.Machine(), c.LastIndex(), 0)
		failAt(now)
		want = min(2*want, MaxLogFailureRetry.Milliseconds())
	}
	if want != 30_000 {
		t.Fatalf("wait %d ms after 15 failures, want the cap", want)
	}
	recoverAt(now + want)
	// A recovery that fails doubles the wait too (the cap holds).
	c.RecoveryFailed(at(now), errDisk)
	recoverAt(now + 30_000)
	c.Recovered(at(now), c.Machine(), c.LastIndex(), 0)
	// Healthy: a record appended after the recovery becomes durable.
	ok := reserve("ok", "u-ok")
	c.Decide(at(now), ok)
	if act := commit(t, c, nil); act.Wait == nil || ok.Err != nil {
		t.Fatalf("after recovery: %v", ok.Err)
	}
	c.Durable(c.LastIndex() - 1)
	failAt(now + 1)
	if retry, _ := c.RetryAt(); retry.Sub(at(now)) != 30*time.Second {
		t.Fatalf("the wait reset before the new record was durable: %v", retry.Sub(at(now)))
	}
	recoverAt(now + 30_000)
	c.Recovered(at(now), c.Machine(), c.LastIndex(), 0)
	c.Decide(at(now), reserve("ok2", "u-ok2"))
	commit(t, c, nil)
	c.Durable(c.LastIndex())
	failAt(now + 1)
	if retry, _ := c.RetryAt(); retry.Sub(at(now)) != 10*time.Millisecond {
		t.Fatalf("the wait after healing is %v, want 10ms", retry.Sub(at(now)))
	}
}

// A failed fsync never heals in place: no recovery is ever due.
func TestFsyncFailureNeverRecovers(t *testing.T) {
	c := recovered(t, Config{LogFailureRetry: 10 * time.Millisecond}, ptr(def(10)))
	call := reserve("r1", "u1")
	c.Decide(at(1), call)
	commit(t, c, fmt.Errorf("write records 2..2: %w", wal.ErrSyncFailed), 0)
	if !errors.Is(c.Failed(), wal.ErrSyncFailed) {
		t.Fatalf("Failed() %v does not wrap wal.ErrSyncFailed", c.Failed())
	}
	c.LogFailed(at(2), errDisk) // a later error does not rearm it
	for _, ms := range []int64{10, 1000, 3_600_000} {
		c.Tick(at(ms))
		if commit(t, c, nil).Recover {
			t.Fatalf("a recovery after a failed fsync, at %d ms", ms)
		}
	}
	if _, armed := c.RetryAt(); armed {
		t.Fatal("a recovery armed after a failed fsync")
	}
}

// The first recovery may fail (a transient I/O error at start): it is
// retried like a log failure.
func TestFailedFirstRecoveryIsRetried(t *testing.T) {
	c := New(Config{Rand: zeroRand{}, LogFailureRetry: time.Second})
	call := reserve("r1", "u1")
	c.Decide(t0, call)
	if act := commit(t, c, nil); len(act.Answer) != 1 || !errors.Is(call.Err, ErrUnavailable) {
		t.Fatalf("before recovery: %v", call.Err)
	}
	c.RecoveryFailed(t0, errDisk)
	if !errors.Is(c.Failed(), errDisk) {
		t.Fatalf("Failed() %v", c.Failed())
	}
	c.Tick(at(1000))
	if !commit(t, c, nil).Recover {
		t.Fatal("the failed first recovery is not retried")
	}
	c.Recovered(at(1000), sku.New(), 0, 0)
	if c.Failed() != nil {
		t.Fatal(c.Failed())
	}
}

// Expiry runs on ticks, ExpiryBatch at a time, decided by expire_at.
func TestTickExpires(t *testing.T) {
	c := recovered(t, Config{ExpiryBatch: 2}, ptr(def(10)))
	for i := range 3 {
		c.Decide(at(1), reserve(fmt.Sprint("r", i), fmt.Sprint("u", i)))
	}
	commit(t, c, nil)
	c.Tick(at(60_000)) // expire_at is 60_001
	act := commit(t, c, nil)
	if !act.Ticked || act.Expired != 0 || act.NextExpiry != at(60_001).UnixMilli() || act.Wait != nil {
		t.Fatalf("tick before expire_at: %+v", act)
	}
	c.Tick(at(60_001))
	act = commit(t, c, nil)
	if act.Expired != 2 || !act.MoreExpiry || act.Wait == nil || act.Wait.Index != c.LastIndex() || len(act.Wait.Calls) != 0 {
		t.Fatalf("first expiry step: %+v", act)
	}
	c.Tick(at(60_001))
	act = commit(t, c, nil)
	if act.Expired != 1 || act.MoreExpiry || act.NextExpiry != 1<<63-1 {
		t.Fatalf("second expiry step: %+v", act)
	}
	if n := c.Machine().Counts(); n.Closed != 3 || n.Available != 10 {
		t.Fatalf("counts %+v", n)
	}
}

// Snapshots: due by count or by age on a tick, one at a time; a request
// during one starts after it; a failure pauses automatic ones.
func TestSnapshotSchedule(t *testing.T) {
	d := def(10)
	d.PaymentWindowMs = 3_600_000 // no expiry records in this script
	c := recovered(t, Config{SnapshotEvery: 3, SnapshotInterval: time.Minute, SnapshotRetryAfter: 10 * time.Second}, &d)
	reserveN := func(ms int64, n int) {
		for range n {
			k := c.LastIndex() + uint64(len(c.Ready().Records))
			c.Decide(at(ms), reserve(fmt.Sprint("r", k), fmt.Sprint("u", k)))
		}
		commit(t, c, nil)
	}
	tick := func(ms int64) *Snapshot {
		c.Tick(at(ms))
		return commit(t, c, nil).Snapshot
	}
	reserveN(1, 1) // records 1..2
	if s := tick(2); s != nil {
		t.Fatalf("a snapshot after 2 records: %+v", s)
	}
	reserveN(3, 1)
	s := tick(4)
	if s == nil || s.Index != 3 || s.Frozen.Counts().Reservations != 2 {
		t.Fatalf("no snapshot at 3 records: %+v", s)
	}
	reserveN(5, 3)
	if again := tick(6); again != nil {
		t.Fatal("a second snapshot while one runs")
	}
	if s, err := c.RequestSnapshot(); s != nil || err != nil {
		t.Fatalf("a request while one runs: %v %v", s, err)
	}
	act := c.SnapshotDone(at(7), 3, nil)
	if act.Snapshot == nil || act.Snapshot.Index != 6 {
		t.Fatalf("the requested snapshot did not start after the running one: %+v", act)
	}
	c.SnapshotDone(at(8), 6, errDisk)
	reserveN(9, 3)
	if s := tick(10_007); s != nil {
		t.Fatal("a snapshot within SnapshotRetryAfter of a failure")
	}
	if s := tick(10_008); s == nil || s.Index != 9 {
		t.Fatalf("no snapshot once the retry pause is over: %+v", s)
	}
	c.SnapshotDone(at(10_009), 9, nil)
	reserveN(10_010, 1)
	if s := tick(70_008); s != nil {
		t.Fatalf("a snapshot by age before SnapshotInterval: %+v, last %d", s, c.LastIndex())
	}
	if s := tick(70_009); s == nil || s.Index != 10 {
		t.Fatalf("no snapshot by age: %+v", s)
	}
	// A request is refused while the SKU is failed, and a running one's
	// queued request is refused when it ends.
	if _, err := c.RequestSnapshot(); err != nil {
		t.Fatal(err)
	}
	c.LogFailed(at(70_010), errDisk)
	if act := c.SnapshotDone(at(70_011), 10, nil); act.Snapshot != nil || !errors.Is(act.SnapshotRefused, ErrUnavailable) {
		t.Fatalf("a queued request after a failure: %+v", act)
	}
	if _, err := c.RequestSnapshot(); !errors.Is(err, errDisk) {
		t.Fatalf("a request to a failed SKU: %v", err)
	}
	if _, err := recovered(t, Config{}, nil).RequestSnapshot(); !errors.Is(err, ErrUndefined) {
		t.Fatalf("a request before the definition: %v", err)
	}
}

// Two cores fed the same inputs reach the same state, records and answers.
func TestDeterministic(t *testing.T) {
	run := func() (hash [32]byte, trace string) {
		c := recovered(t, Config{ExpiryBatch: 3, SnapshotEvery: 5}, ptr(def(4)))
		for i := range 40 {
			ms := int64(i) * 7_000
			switch i % 4 {
			case 0, 1:
				c.Decide(at(ms), reserve(fmt.Sprint("r", i%13), fmt.Sprint("u", i%9)))
			case 2:
				c.Tick(at(ms))
			case 3:
				c.Decide(at(ms), &Call{Kind: KindPause + Kind(i%8/4)}) // pause, resume
			}
			rd := c.Ready()
			for _, r := range rd.Records {
				trace += fmt.Sprintf("%d:%x ", r.Type, r.AppendPayload(nil))
			}
			act := c.Advance(len(rd.Records), nil)
			if act.Snapshot != nil {
				c.SnapshotDone(at(ms), act.Snapshot.Index, nil)
			}
		}
		return c.Machine().Hash(), trace
	}
	h1, t1 := run()
	h2, t2 := run()
	if h1 != h2 || t1 != t2 {
		t.Fatal("the same inputs gave different states or records")
	}
}

func TestAdvanceRejectsAShellError(t *testing.T) {
	c := recovered(t, Config{}, ptr(def(4)))
	c.Decide(at(1), reserve("r1", "u1"))
	defer func() {
		if recover() == nil {
			t.Fatal("Advance took fewer records than Ready without an error")
		}
	}()
	c.Advance(0, nil)
}
