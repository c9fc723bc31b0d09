package actors

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/wal"
)

// gatedStore holds every Sync while its gate is shut (a disk that hangs),
// under the test's control rather than a timer's.
type gatedStore struct {
	wal.Store
	mu   sync.Mutex
	gate chan struct{} // nil: open; closed when opened
}

func (s *gatedStore) shut() {
	s.mu.Lock()
	s.gate = make(chan struct{})
	s.mu.Unlock()
}

func (s *gatedStore) open() {
	s.mu.Lock()
	close(s.gate)
	s.gate = nil
	s.mu.Unlock()
}

func (s *gatedStore) Sync() error {
	s.mu.Lock()
	gate := s.gate
	s.mu.Unlock()
	if gate != nil {
		<-gate
	}
	return s.Store.Sync()
}

// gatedEngine is a test engine with SKU c1/s1 defined (stock 1000) whose
// log writes one record per batch through a gatedStore, with a fake clock
// and no tick loop.
func gatedEngine(t *testing.T, inboxMax int) (*Engine, *SKU, *gatedStore, *fakeClock) {
	t.Helper()
	fs := &gatedStore{}
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
	return e, e.SKU("c1", "s1"), fs, clock
}

// stickActor shuts the gate of fs and leaves h's actor stuck, for certain,
// until the gate opens: it sends three reserves (reserve(0..2), run on
// their own goroutines) and waits until the actor has decided all three.
// With one record per batch, the first reserve's batch waits in Sync, the
// second's record fills the pending batch, and the third's Append waits
// for room: the actor takes no call and handles no message meanwhile.
func stickActor(t *testing.T, h *SKU, fs *gatedStore, reserve func(i int)) {
	t.Helper()
	fs.shut()
	base := h.activity.accepted.Load()
	for i := range 3 {
		go reserve(i)
	}
	eventually(t, func() bool { return h.activity.accepted.Load() == base+3 })
}

// A SKU's inbox holds at most Config.InboxMax calls, whoever calls: with
// the actor stuck (its log's batch full, the disk hung), a flood of calls
// fills the inbox to the bound and every call beyond it is refused at once
// with ErrBusy, never queued and never blocking; once the disk is back the
// queued calls are decided.
func TestInboxBoundRefusesWithErrBusy(t *testing.T) {
	const inboxMax = 8
	e, h, fs, _ := gatedEngine(t, inboxMax)
	var wg sync.WaitGroup
	results := make(chan error, 3+inboxMax)
	reserve := func(i int) {
		defer wg.Done()
		res, err := e.Reserve(context.Background(), "c1", "s1", fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i))
		if err == nil && res.Outcome != sku.OutcomeAccepted {
			err = fmt.Errorf("reserve %d: %s", i, res.Outcome)
		}
		results <- err
	}
	wg.Add(3)
	stickActor(t, h, fs, reserve)
	if q := h.Stats().Queued; q != 0 {
		t.Fatalf("%d calls queued before the flood, want 0 (the actor took them)", q)
	}
	wg.Add(inboxMax)
	for i := 3; i < 3+inboxMax; i++ {
		go reserve(i)
	}
	eventually(t, func() bool { return h.Stats().Queued == inboxMax })
	for j := range 100 {
		_, err := e.Reserve(ctxT(t), "c1", "s1", fmt.Sprintf("over%d", j), fmt.Sprintf("uo%d", j))
		if !errors.Is(err, ErrBusy) {
			t.Fatalf("call %d beyond the bound: %v, want ErrBusy", j, err)
		}
		if q := h.Stats().Queued; q != inboxMax {
			t.Fatalf("%d calls queued, want the bound %d", q, inboxMax)
		}
	}
	fs.open()
	wg.Wait()
	close(results)
	for err := range results {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := mustAudit(t, e).Counts.Reservations; n != 3+inboxMax {
		t.Fatalf("%d reservations, want the %d decided and queued before the flood", n, 3+inboxMax)
	}
}

// Ticks do not pile up in the mailbox of a stuck actor: Engine.Tick sends
// a SKU no tick while its last one is still waiting, and sends again once
// it was handled.
func TestTicksDoNotPileUp(t *testing.T) {
	e, h, fs, clock := gatedEngine(t, 0)
	var wg sync.WaitGroup
	wg.Add(3)
	stickActor(t, h, fs, func(i int) {
		defer wg.Done()
		e.Reserve(context.Background(), "c1", "s1", fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i))
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
	fs.open()
	wg.Wait()
	step(t, e, clock, 0) // the waiting tick handled (a barrier)
	if h.tickPending.Load() {
		t.Fatal("the tick handled, still pending")
	}
	// The actor may handle the next tick before the test looks at
	// tickPending: the tick's mark (set by Tick on this goroutine) tells.
	handled := e.ticked[h]
	clock.Set(t0 + 2000*int64(idleTick/time.Millisecond))
	e.Tick(clock.Now())
	if e.ticked[h] == handled {
		t.Fatal("no tick sent once the last one was handled")
	}
}
