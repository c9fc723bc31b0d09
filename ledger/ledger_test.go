package ledger

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/etcdtest"
)

// head returns the first n tokens of r as a range list.
func head(r sku.TokenRange, n uint32) []sku.TokenRange {
	return []sku.TokenRange{{First: r.First, Last: r.First + n - 1}}
}

var demo = SKU{Campaign: "demo", SKU: "sku-1"}

func newLedger(t *testing.T, endpoint string) *Ledger {
	t.Helper()
	c, err := Dial([]string{endpoint})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return New(c, "/test")
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func mustCheck(t *testing.T, l *Ledger) State {
	t.Helper()
	st, err := l.Read(ctxFor(t, 10*time.Second), demo)
	if err != nil {
		t.Fatal(err)
	}
	if bad := st.Check(); len(bad) != 0 {
		t.Fatalf("ledger check: %v", bad)
	}
	return st
}

// TestLedgerAgainstRealEtcd runs the ledger against one etcd process:
// publish with initial grants, four cells racing top-ups to exhaustion,
// fencing by epoch, returns credited once and granted again, a top-up
// whose answer is lost (the proxy holds etcd's replies) retried with the
// same seq, and a top-up while etcd is SIGSTOPped.
func TestLedgerAgainstRealEtcd(t *testing.T) {
	srv := etcdtest.Start(t)
	l := newLedger(t, srv.Endpoint)
	cells := []string{"c1", "c2", "c3", "c4"}
	var initial []InitialGrant
	for _, c := range cells {
		initial = append(initial, InitialGrant{Cell: c, Units: 240})
	}
	if _, err := l.Publish(ctxFor(t, 10*time.Second), demo, 1000, 7, initial); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Publish(ctxFor(t, 10*time.Second), demo, 1000, 7, initial); !errors.Is(err, ErrExists) {
		t.Fatalf("second publish: %v", err)
	}
	epochs := map[string]uint64{}
	for _, c := range cells {
		e, err := l.BumpEpoch(ctxFor(t, 10*time.Second), c)
		if err != nil || e != 1 {
			t.Fatalf("bump %s: %d %v", c, e, err)
		}
		epochs[c] = e
	}

	t.Run("race", func(t *testing.T) {
		// Two writers per cell: each seq is claimed by whoever gets there
		// first, the other finds it.
		var wg sync.WaitGroup
		var mu sync.Mutex
		got := map[string]map[uint64]uint64{} // cell -> seq -> units, as each writer saw
		for _, c := range cells {
			got[c] = map[uint64]uint64{}
			for w := 0; w < 2; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for seq := uint64(2); ; seq++ {
						a, err := l.Allocate(ctxFor(t, 20*time.Second), demo, c, seq, epochs[c], 7)
						if errors.Is(err, ErrExhausted) {
							return
						}
						if err != nil {
							t.Errorf("allocate %s/%d: %v", c, seq, err)
							return
						}
						mu.Lock()
						if prev, ok := got[c][seq]; ok && prev != a.Units() {
							t.Errorf("%s/%d seen as %d and %d units", c, seq, prev, a.Units())
						}
						got[c][seq] = a.Units()
						mu.Unlock()
					}
				}()
			}
		}
		wg.Wait()
		st := mustCheck(t, l)
		if st.Pool.Unallocated() != 0 || st.Pool.Granted != 1000 {
			t.Fatalf("after the race: %+v", st.Pool)
		}
	})

	t.Run("fencing", func(t *testing.T) {
		e, err := l.BumpEpoch(ctxFor(t, 10*time.Second), "c1")
		if err != nil || e != 2 {
			t.Fatalf("bump: %d %v", e, err)
		}
		if _, err := l.Allocate(ctxFor(t, 10*time.Second), demo, "c1", 100, 1, 1); !errors.Is(err, ErrFenced) {
			t.Fatalf("allocate at a stale epoch: %v", err)
		}
		if err := l.Credit(ctxFor(t, 10*time.Second), demo, "c1", 1, Allocation{Cell: "c1", Seq: 1, Ranges: head(mustState(t, l).Allocs["c1"][0].Ranges[0], 1)}); !errors.Is(err, ErrFenced) {
			t.Fatalf("credit at a stale epoch: %v", err)
		}
		epochs["c1"] = e
	})

	t.Run("returns", func(t *testing.T) {
		st := mustState(t, l)
		first := st.Allocs["c2"][0].Ranges[0]
		ret := Allocation{Cell: "c2", Seq: 1, Epoch: epochs["c2"], Ranges: head(first, 10)}
		for range 2 { // the second is a retry: credited once
			if err := l.Credit(ctxFor(t, 10*time.Second), demo, "c2", epochs["c2"], ret); err != nil {
				t.Fatal(err)
			}
		}
		// c3 cannot return c2's tokens.
		stolen := Allocation{Cell: "c3", Seq: 1, Ranges: head(st.Allocs["c2"][0].Ranges[0], 20)[0:1]}
		stolen.Ranges[0].First += 10
		if err := l.Credit(ctxFor(t, 10*time.Second), demo, "c3", epochs["c3"], stolen); !errors.Is(err, ErrNotOwned) {
			t.Fatalf("credit of another cell's tokens: %v", err)
		}
		st = mustCheck(t, l)
		if st.Pool.Returned != 10 || st.Pool.Unallocated() != 10 {
			t.Fatalf("after a return of 10: %+v", st.Pool)
		}
		// The returned tokens go to the next top-up, here c4's.
		a, err := l.Allocate(ctxFor(t, 10*time.Second), demo, "c4", 1000, epochs["c4"], 50)
		if err != nil || a.Units() != 10 || a.Ranges[0] != ret.Ranges[0] {
			t.Fatalf("regrant: %+v %v", a, err)
		}
		mustCheck(t, l)
	})

	t.Run("lost answer retried with the same seq", func(t *testing.T) {
		if err := l.Credit(ctxFor(t, 10*time.Second), demo, "c4", epochs["c4"], Allocation{Cell: "c4", Seq: 1, Ranges: head(mustState(t, l).Allocs["c4"][0].Ranges[0], 30)}); err != nil {
			t.Fatal(err)
		}
		proxy, err := etcdtest.NewProxy(srv.Endpoint)
		if err != nil {
			t.Fatal(err)
		}
		defer proxy.Close()
		cut := newLedger(t, proxy.Addr)
		if _, err := cut.Epoch(ctxFor(t, 10*time.Second), "c1"); err != nil { // connected
			t.Fatal(err)
		}
		cut.SetBeforeCommit(proxy.CutReplies) // the read passes, the commit's answer is held
		_, err = cut.Allocate(ctxFor(t, 1500*time.Millisecond), demo, "c1", 500, epochs["c1"], 20)
		if err == nil {
			t.Fatal("allocate answered through a cut link")
		}
		// The request went through; its answer did not.
		if got := mustState(t, l).Allocs["c1"]; got[len(got)-1].Seq != 500 {
			t.Fatalf("the allocation did not commit: last seq %d", got[len(got)-1].Seq)
		}
		cut.SetBeforeCommit(nil)
		proxy.Heal()
		a, err := cut.Allocate(ctxFor(t, 20*time.Second), demo, "c1", 500, epochs["c1"], 20)
		if err != nil || a.Units() != 20 {
			t.Fatalf("retry: %+v %v", a, err)
		}
		st := mustCheck(t, l)
		if st.Pool.Unallocated() != 10 {
			t.Fatalf("the retry granted again: %+v", st.Pool)
		}
	})

	t.Run("etcd paused", func(t *testing.T) {
		if err := srv.Pause(); err != nil {
			t.Fatal(err)
		}
		_, err := l.Allocate(ctxFor(t, time.Second), demo, "c2", 600, epochs["c2"], 5)
		if resumeErr := srv.Resume(); resumeErr != nil {
			t.Fatal(resumeErr)
		}
		if err == nil {
			t.Fatal("allocate answered by a stopped etcd")
		}
		for _, want := range []uint64{5, 5} { // the retry, then a repeat: one allocation
			a, err := l.Allocate(ctxFor(t, 20*time.Second), demo, "c2", 600, epochs["c2"], 5)
			if err != nil || a.Units() != want {
				t.Fatalf("after resume: %+v %v", a, err)
			}
		}
		st := mustCheck(t, l)
		if st.Pool.Unallocated() != 5 {
			t.Fatalf("pool after the paused top-up: %+v", st.Pool)
		}
	})
}

func mustState(t *testing.T, l *Ledger) State {
	t.Helper()
	st, err := l.Read(ctxFor(t, 10*time.Second), demo)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestPublishZeroInitialGrant: a cell with an initial grant of 0 units
// gets no allocation 1 (an empty one would not decode: every allocation
// has ranges) and its first top-up is seq 1.
func TestPublishZeroInitialGrant(t *testing.T) {
	srv := etcdtest.Start(t)
	l := newLedger(t, srv.Endpoint)
	allocs, err := l.Publish(ctxFor(t, 10*time.Second), demo, 100, 10, []InitialGrant{{Cell: "c1", Units: 0}, {Cell: "c2", Units: 30}})
	if err != nil {
		t.Fatal(err)
	}
	if len(allocs) != 1 || allocs[0].Cell != "c2" || allocs[0].Units() != 30 {
		t.Fatalf("initial allocations: %+v", allocs)
	}
	if got, err := l.Allocations(ctxFor(t, 10*time.Second), demo, "c1"); err != nil || len(got) != 0 {
		t.Fatalf("c1's allocations: %v %v", got, err)
	}
	e, err := l.BumpEpoch(ctxFor(t, 10*time.Second), "c1")
	if err != nil {
		t.Fatal(err)
	}
	a, err := l.Allocate(ctxFor(t, 10*time.Second), demo, "c1", 1, e, 0)
	if err != nil || a.Units() != 10 {
		t.Fatalf("c1's first top-up: %+v %v", a, err)
	}
	st, err := l.Read(ctxFor(t, 10*time.Second), demo)
	if err != nil {
		t.Fatal(err)
	}
	if bad := st.Check(); len(bad) != 0 {
		t.Fatal(bad)
	}
}

// TestWriteOffCell: a lost cell's quota written off is never granted,
// credited or listed to that cell again, the write-off is idempotent, and
// the ledger's conservation counts it as held.
func TestWriteOffCell(t *testing.T) {
	srv := etcdtest.Start(t)
	l := newLedger(t, srv.Endpoint)
	ctx := ctxFor(t, 20*time.Second)
	if _, err := l.Publish(ctx, demo, 100, 10, []InitialGrant{{Cell: "c1", Units: 30}, {Cell: "c2", Units: 30}}); err != nil {
		t.Fatal(err)
	}
	e, err := l.BumpEpoch(ctx, "c2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Allocate(ctx, demo, "c2", 2, e, 0); err != nil {
		t.Fatal(err)
	}
	ret := Allocation{Cell: "c2", Seq: 1, Epoch: e, Ranges: []sku.TokenRange{{First: 31, Last: 35}}}
	if err := l.Credit(ctx, demo, "c2", e, ret); err != nil {
		t.Fatal(err)
	}
	w, err := l.WriteOffCell(ctx, demo, "c2", 1234)
	if err != nil {
		t.Fatal(err)
	}
	if w.Units != 35 || w.Allocations != 2 || w.Returns != 1 || w.AtMs != 1234 {
		t.Fatalf("write-off: %+v, want 30 + 10 - 5 = 35 units over 2 allocations and 1 return", w)
	}
	if again, err := l.WriteOffCell(ctx, demo, "c2", 9999); err != nil || again != w {
		t.Fatalf("a second write-off: %+v %v, want the first", again, err)
	}
	if _, err := l.Allocate(ctx, demo, "c2", 3, e, 0); !errors.Is(err, ErrWrittenOff) {
		t.Fatalf("a top-up of a written-off cell: %v", err)
	}
	if _, err := l.Allocate(ctx, demo, "c2", 2, e, 0); !errors.Is(err, ErrWrittenOff) {
		t.Fatalf("a retried top-up of a written-off cell: %v", err)
	}
	ret2 := Allocation{Cell: "c2", Seq: 2, Epoch: e, Ranges: []sku.TokenRange{{First: 36, Last: 40}}}
	if err := l.Credit(ctx, demo, "c2", e, ret2); !errors.Is(err, ErrWrittenOff) {
		t.Fatalf("a credit of a written-off cell: %v", err)
	}
	if _, err := l.Allocations(ctx, demo, "c2"); !errors.Is(err, ErrWrittenOff) {
		t.Fatalf("listing a written-off cell's allocations for it: %v", err)
	}
	if got, err := l.Allocations(ctx, demo, "c1"); err != nil || len(got) != 1 {
		t.Fatalf("another cell's allocations: %v %v", got, err)
	}
	st, err := l.Read(ctx, demo)
	if err != nil {
		t.Fatal(err)
	}
	if bad := st.Check(); len(bad) != 0 {
		t.Fatal(bad)
	}
	if st.WrittenOff["c2"] != w || st.Held("c2") != 35 {
		t.Fatalf("state: written off %+v, c2 holds %d", st.WrittenOff, st.Held("c2"))
	}
	// The tokens the lost cell held are never granted again: what is left
	// to grant excludes them (the 5 it returned before are free, fairly).
	lost := heldOf(st.Allocs["c2"], st.Returns["c2"])
	for seq := uint64(2); ; seq++ {
		a, err := l.Allocate(ctx, demo, "c1", seq, mustBump(t, l, "c1", seq), 0)
		if errors.Is(err, ErrExhausted) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if n := lost.count(a.Ranges); n != 0 {
			t.Fatalf("c1 was granted %v: %d tokens of the written-off cell", a.Ranges, n)
		}
	}
	if st, err = l.Read(ctx, demo); err != nil || len(st.Check()) != 0 || st.Held("c1")+st.Held("c2")+sku.RangesUnits(st.Pool.Free) != 100 {
		t.Fatalf("after the rest was sold: %v %v, c1 %d c2 %d", err, st.Check(), st.Held("c1"), st.Held("c2"))
	}
}

// mustBump takes c1's epoch once (seq 2), then keeps it.
func mustBump(t *testing.T, l *Ledger, cell string, seq uint64) uint64 {
	t.Helper()
	if seq == 2 {
		e, err := l.BumpEpoch(ctxFor(t, 10*time.Second), cell)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	e, err := l.Epoch(ctxFor(t, 10*time.Second), cell)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
