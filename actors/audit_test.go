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
// ErrAuditPending, and once the recount is done its result (the state at
// its freeze) goes to the next caller instead of a recount of its own; the
// one after recounts afresh, once the cool-down is over.
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
	// The recount took an hour by the engine's clock: an hour of
	// cool-down after it, so that a caller who asks while it still runs,
	// and gives up, starts no recount when it ends.
	clock.Set(t0 + time.Hour.Milliseconds())
	release()
	var a sku.Audit
	eventually(t, func() bool { // until the recount is done
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		var err error
		a, err = e.Audit(ctx, "c1", "s1")
		return !errors.Is(err, ErrAuditPending)
	})
	if a.Counts.Reservations != 10 { // the result the callers gave up on
		t.Fatalf("the abandoned recount: %d reservations; want the 10 of the freeze", a.Counts.Reservations)
	}
	if n := len(started); n != 0 {
		t.Fatalf("%d more recounts started while one ran", n)
	}
	clock.Set(t0 + 2*time.Hour.Milliseconds()) // the cool-down is over
	if got := mustAudit(t, e); got.Counts.Reservations != 15 {
		t.Fatalf("next audit: %d reservations, want 15", got.Counts.Reservations)
	}
}

// TestAuditAfterAChangeSeesIt: an audit asked after a cancel was answered
// shows the cancel, even while a recount frozen before the cancel still
// runs: it does not share that recount (whose state its caller could never
// have read), it waits for the next one. An audit asked before the cancel
// shares the recount (the state was still the one frozen), and gets the
// state of the freeze, as the first audit does.
func TestAuditAfterAChangeSeesIt(t *testing.T) {
	clock := &fakeClock{}
	d := testDef(10)
	e := openTest(t, t.TempDir(), clock, &d)
	res, err := e.Reserve(ctxT(t), "c1", "s1", "r1", "u1")
	if err != nil || res.Outcome != sku.OutcomeAccepted {
		t.Fatalf("reserve: %v %v", res.Outcome, err)
	}
	h := e.SKU("c1", "s1")
	ask := func() *auditCaller { // Engine.Audit's request, posted before it returns
		c := &auditCaller{reply: make(chan auditAnswer, 1)}
		if err := h.requestAudit(c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	taken := func() { // the audits asked so far are with the shell
		eventually(t, func() bool {
			h.ops.mu.Lock()
			defer h.ops.mu.Unlock()
			return len(h.ops.audits) == 0 && !h.ops.posted
		})
		// A read through the actor after that finds the message handled.
		if _, err := e.Get(ctxT(t), res.Reservation.ReservationID); err != nil {
			t.Fatal(err)
		}
	}
	started, release := holdRecount(t)
	first := ask()
	<-started // frozen with the reservation pending; the recount is held
	sharer := ask()
	taken()
	if got, err := e.Cancel(ctxT(t), res.Reservation.ReservationID); err != nil || got.Outcome != sku.OutcomeClosed {
		t.Fatalf("cancel: %v %v", got.Outcome, err)
	}
	second := ask()
	taken()
	release()
	for name, c := range map[string]*auditCaller{"the first audit": first, "the audit asked before the cancel": sharer} {
		if a := <-c.reply; a.err != nil || a.audit.Counts.PendingPayment != 1 || a.audit.Counts.Closed != 0 {
			t.Fatalf("%s: %+v %v, want the reservation pending as at the freeze", name, a.audit.Counts, a.err)
		}
	}
	if a := <-second.reply; a.err != nil || a.audit.Counts.PendingPayment != 0 || a.audit.Counts.Closed != 1 || a.audit.Counts.Available != 10 {
		t.Fatalf("the audit asked after the cancel: %+v %v, want it closed and 10 available", a.audit.Counts, a.err)
	}
	if n := len(started); n != 1 {
		t.Fatalf("%d recounts after the first, want 1: the second audit's (the one asked before the cancel shares the first)", n)
	}
}

// TestAuditCoolDown: a recount starts no sooner after the last one ended
// than that one took, by the engine's clock; a caller whose deadline falls
// within gets ErrAuditPending, one that waits gets its recount once a tick
// passes the end of the cool-down.
func TestAuditCoolDown(t *testing.T) {
	clock := &fakeClock{}
	d := testDef(10)
	cfg := Config{DataDir: t.TempDir(), Clock: clock.Now, ManualTick: true, Logger: quiet}
	clock.Set(t0)
	e := openWith(t, cfg)
	if err := e.Define(ctxT(t), d); err != nil {
		t.Fatal(err)
	}
	started, release := holdRecount(t)
	first := make(chan error, 1)
	go func() { _, err := e.Audit(ctxT(t), "c1", "s1"); first <- err }()
	<-started
	clock.Set(t0 + time.Hour.Milliseconds()) // the recount took an hour
	release()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := e.Audit(ctx, "c1", "s1"); !errors.Is(err, ErrAuditPending) {
		t.Fatalf("audit in the cool-down: %v, want ErrAuditPending", err)
	}
	if n := len(started); n != 0 {
		t.Fatalf("%d recounts started in the cool-down", n)
	}
	waiting := make(chan error, 1)
	go func() { _, err := e.Audit(ctxT(t), "c1", "s1"); waiting <- err }()
	clock.Set(t0 + 2*time.Hour.Milliseconds())
	e.Tick(clock.Now()) // the cool-down is over: the waiting caller's recount starts
	if err := <-waiting; err != nil {
		t.Fatal(err)
	}
	if _, err := e.Audit(ctxT(t), "c1", "nope"); !errors.Is(err, ErrUnknownSKU) {
		t.Fatalf("unknown SKU: %v", err)
	}
}
