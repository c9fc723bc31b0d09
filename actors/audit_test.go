package actors

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
)

// holdRecount makes every recount wait until the returned release is
// called, and reports each start on started.
func holdRecount(t *testing.T) (started chan struct{}, release func()) {
	started, gate := make(chan struct{}, 8), make(chan struct{})
	orig := recount
	recount = func(f *sku.Frozen) sku.Audit {
		started <- struct{}{}
		<-gate
		return orig(f)
	}
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(func() { release(); recount = orig })
	return started, release
}

// TestAuditDoesNotStopTheSale: while a SKU's recount runs, reserves are
// decided and answered; callers whose deadline passes first get
// ErrAuditPending and share the one recount, whose result (the state at
// its freeze) the next caller gets; the one after recounts afresh.
func TestAuditDoesNotStopTheSale(t *testing.T) {
	clock := &fakeClock{}
	d := testDef(100)
	e := openTest(t, t.TempDir(), clock, &d)
	for i := range 10 {
		if res, err := e.Reserve(ctxT(t), "c1", "s1", "r"+string(rune('a'+i)), "u"+string(rune('a'+i))); err != nil || res.Outcome != sku.OutcomeAccepted {
			t.Fatalf("reserve %d: %v %v", i, res.Outcome, err)
		}
	}
	started, release := holdRecount(t)

	short, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { _, err := e.Audit(short, "c1", "s1"); first <- err }()
	<-started // frozen at 10 reservations; the recount is held
	for i := range 5 {
		if res, err := e.Reserve(ctxT(t), "c1", "s1", "late"+string(rune('a'+i)), "v"+string(rune('a'+i))); err != nil || res.Outcome != sku.OutcomeAccepted {
			t.Fatalf("reserve during the audit %d: %v %v", i, res.Outcome, err)
		}
	}
	cancel()
	if err := <-first; !errors.Is(err, ErrAuditPending) {
		t.Fatalf("audit past its deadline: %v, want ErrAuditPending", err)
	}
	gone, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := e.Audit(gone, "c1", "s1"); !errors.Is(err, ErrAuditPending) {
		t.Fatalf("second audit past its deadline: %v, want ErrAuditPending", err)
	}
	release()
	a := mustAudit(t, e) // the result the callers gave up on
	if a.Counts.Reservations != 10 {
		t.Fatalf("the abandoned recount: %d reservations; want the 10 of the freeze", a.Counts.Reservations)
	}
	if n := len(started); n != 0 {
		t.Fatalf("%d more recounts started while one ran", n)
	}
	if got := mustAudit(t, e); got.Counts.Reservations != 15 {
		t.Fatalf("next audit: %d reservations, want 15", got.Counts.Reservations)
	}
}

// TestAuditCoolDown: a recount starts no sooner after the last one than
// that one took; a caller whose deadline falls within gets ErrAuditPending.
func TestAuditCoolDown(t *testing.T) {
	clock := &fakeClock{}
	d := testDef(10)
	e := openTest(t, t.TempDir(), clock, &d)
	h := e.SKU("c1", "s1")
	h.audit.mu.Lock()
	h.audit.notBefore = time.Now().Add(time.Hour) // as after a recount of an hour
	h.audit.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := e.Audit(ctx, "c1", "s1"); !errors.Is(err, ErrAuditPending) {
		t.Fatalf("audit in the cool-down: %v, want ErrAuditPending", err)
	}
	h.audit.mu.Lock()
	h.audit.notBefore = time.Time{}
	h.audit.mu.Unlock()
	mustAudit(t, e)
	if _, err := e.Audit(ctxT(t), "c1", "nope"); !errors.Is(err, ErrUnknownSKU) {
		t.Fatalf("unknown SKU: %v", err)
	}
}
