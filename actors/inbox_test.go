package actors

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/wal"
)

// A SKU's inbox holds at most Config.InboxMax calls, whoever calls: with
// the actor stuck (its log's batch full, the disk hung), a flood of calls
// fills the inbox to the bound and every call beyond it is refused at once
// with ErrBusy, never queued and never blocking; once the disk is back the
// queued calls are decided.
func TestInboxBoundRefusesWithErrBusy(t *testing.T) {
	const inboxMax = 8
	fs := &stallingStore{}
	clock := &fakeClock{}
	clock.Set(t0)
	cfg := Config{DataDir: t.TempDir(), Clock: clock.Now, ManualTick: true, Logger: quiet, InboxMax: inboxMax}
	cfg.WAL.MaxBatchRecords = 1
	cfg.WAL.OpenStore = func(dir string, o wal.StoreOptions) (wal.Store, error) {
		st, err := wal.OpenTidwallStore(dir, o)
		fs.Store = st
		return fs, err
	}
	e := openWith(t, cfg)
	if err := e.Define(ctxT(t), testDef(1000)); err != nil {
		t.Fatal(err)
	}
	h := e.SKU("c1", "s1")
	fs.stall.Lock() // the disk hangs: the flusher waits in Sync

	var wg sync.WaitGroup
	results := make(chan error, 1000)
	reserve := func(i int) {
		defer wg.Done()
		res, err := e.Reserve(context.Background(), "c1", "s1", fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i))
		if err == nil && res.Outcome != sku.OutcomeAccepted {
			err = fmt.Errorf("reserve %d: %s", i, res.Outcome)
		}
		results <- err
	}
	// Until the actor is stuck in Append (one batch syncing, the next one
	// full), the calls it takes do not stay in the inbox.
	i := 0
	eventually(t, func() bool {
		wg.Add(1)
		go reserve(i)
		i++
		return strings.Contains(goroutines(), "wal.(*Log).Append")
	})
	eventually(t, func() bool { // the reserves in flight reach the inbox or ErrBusy
		wg.Add(1)
		go reserve(i)
		i++
		return h.Stats().Queued == inboxMax
	})
	for j := range 100 {
		_, err := e.Reserve(ctxT(t), "c1", "s1", fmt.Sprintf("over%d", j), fmt.Sprintf("uo%d", j))
		if !errors.Is(err, ErrBusy) {
			t.Fatalf("call %d beyond the bound: %v, want ErrBusy", j, err)
		}
		if q := h.Stats().Queued; q > inboxMax {
			t.Fatalf("%d calls queued, the bound is %d", q, inboxMax)
		}
	}
	fs.stall.Unlock()
	wg.Wait()
	close(results)
	accepted, busy := 0, 0
	for err := range results {
		switch {
		case err == nil:
			accepted++
		case errors.Is(err, ErrBusy):
			busy++
		default:
			t.Fatal(err)
		}
	}
	if accepted < inboxMax || accepted+busy != i {
		t.Fatalf("%d of %d flooding reserves accepted, %d busy: want at least the %d queued accepted", accepted, i, busy, inboxMax)
	}
	if n := mustAudit(t, e).Counts.Reservations; int(n) != accepted {
		t.Fatalf("%d reservations, %d accepted", n, accepted)
	}
}

// Ticks do not pile up in the mailbox of a stuck actor: Engine.Tick sends
// a SKU no tick while its last one is still waiting, and sends again once
// it was handled.
func TestTicksDoNotPileUp(t *testing.T) {
	fs := &stallingStore{}
	clock := &fakeClock{}
	clock.Set(t0)
	cfg := Config{DataDir: t.TempDir(), Clock: clock.Now, ManualTick: true, Logger: quiet}
	cfg.WAL.MaxBatchRecords = 1
	cfg.WAL.OpenStore = func(dir string, o wal.StoreOptions) (wal.Store, error) {
		st, err := wal.OpenTidwallStore(dir, o)
		fs.Store = st
		return fs, err
	}
	e := openWith(t, cfg)
	if err := e.Define(ctxT(t), testDef(1000)); err != nil {
		t.Fatal(err)
	}
	h := e.SKU("c1", "s1")
	fs.stall.Lock()
	var wg sync.WaitGroup
	i := 0
	eventually(t, func() bool { // the actor stuck in Append
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			e.Reserve(context.Background(), "c1", "s1", fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i))
		}(i)
		i++
		return strings.Contains(goroutines(), "wal.(*Log).Append")
	})
	e.Tick(clock.Now())
	if !h.tickPending.Load() {
		t.Fatal("no tick sent to the SKU")
	}
	sent := e.ticked[h]
	for ms := int64(1); ms <= 1000; ms++ {
		e.Tick(time.UnixMilli(t0 + ms*int64(idleTick/time.Millisecond))) // each one idleTick later: due
	}
	if e.ticked[h] != sent {
		t.Fatalf("a tick sent while the last one waits: %+v, then %+v", sent, e.ticked[h])
	}
	fs.stall.Unlock()
	wg.Wait()
	step(t, e, clock, 0) // the waiting tick handled (a barrier)
	if h.tickPending.Load() {
		t.Fatal("the tick handled, still pending")
	}
	clock.Set(t0 + 2000*int64(idleTick/time.Millisecond))
	e.Tick(clock.Now())
	if !h.tickPending.Load() || e.ticked[h] == sent {
		t.Fatal("no tick sent once the last one was handled")
	}
}
