package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/sku"
)

// fakeClock is a settable clock in Unix milliseconds.
type fakeClock struct{ ms atomic.Int64 }

func (c *fakeClock) Now() time.Time { return time.UnixMilli(c.ms.Load()) }
func (c *fakeClock) Set(ms int64)   { c.ms.Store(ms) }

const t0 = 1_700_000_000_000 // ms

// quiet drops the engine's log lines in tests and benchmarks.
var quiet = slog.New(slog.DiscardHandler)

// fixedRand gives every SKU the same reservation id key, so that two
// engines fed the same commands reach the same state (and hash).
type fixedRand struct{}

func (fixedRand) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(i)
	}
	return len(p), nil
}

func testDef(limit uint32) sku.Definition {
	return sku.Definition{CampaignID: "c1", SKUID: "s1", StartAt: t0, EndAt: t0 + 86_400_000,
		PaymentWindowMs: 60_000, SaleLimit: limit, ReleaseOnClose: true}
}

// openTest opens an engine in dir with a fake clock at t0 and defines d.
func openTest(t testing.TB, dir string, clock *fakeClock, d *sku.Definition) *Engine {
	t.Helper()
	if clock.ms.Load() == 0 {
		clock.Set(t0)
	}
	e, err := Open(Config{DataDir: dir, Clock: clock.Now, ExpiryInterval: time.Hour, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if d != nil {
		if err := e.Define(ctxT(t), *d); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustAudit(t testing.TB, e *Engine) sku.Audit {
	t.Helper()
	a, err := e.Audit(ctxT(t), "c1", "s1")
	if err != nil {
		t.Fatal(err)
	}
	if !a.OK() {
		t.Fatalf("audit: %v", a.Violations)
	}
	return a
}

// race runs n reserves from n users at once and counts outcomes.
func race(t *testing.T, e *Engine, users, goroutines int) map[sku.Outcome]int {
	t.Helper()
	var mu sync.Mutex
	counts := map[sku.Outcome]int{}
	tokens := map[uint32]bool{}
	var wg sync.WaitGroup
	next := atomic.Int64{}
	ctx := ctxT(t)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(users) {
					return
				}
				res, err := e.Reserve(ctx, "c1", "s1", fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				counts[res.Outcome]++
				if res.Outcome == sku.OutcomeAccepted {
					if tokens[res.Reservation.TokenID] {
						t.Errorf("token %d sold twice", res.Reservation.TokenID)
					}
					tokens[res.Reservation.TokenID] = true
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return counts
}

func TestLastTokenRace(t *testing.T) {
	d := testDef(1)
	e := openTest(t, t.TempDir(), &fakeClock{}, &d)
	got := race(t, e, 50, 50)
	if got[sku.OutcomeAccepted] != 1 || got[sku.OutcomeSoldOut] != 49 {
		t.Fatalf("outcomes %v, want 1 ACCEPTED and 49 SOLD_OUT", got)
	}
	if c := mustAudit(t, e).Counts; c.Available != 0 || c.Reserved != 1 {
		t.Fatalf("counts %+v", c)
	}
}

func TestThousandOfTenThousand(t *testing.T) {
	d := testDef(1000)
	e := openTest(t, t.TempDir(), &fakeClock{}, &d)
	got := race(t, e, 10_000, 64)
	if got[sku.OutcomeAccepted] != 1000 || got[sku.OutcomeSoldOut] != 9000 {
		t.Fatalf("outcomes %v, want exactly 1000 ACCEPTED", got)
	}
	mustAudit(t, e)
}

func TestOneUserFiveRequests(t *testing.T) {
	d := testDef(10)
	e := openTest(t, t.TempDir(), &fakeClock{}, &d)
	var wg sync.WaitGroup
	results := make([]sku.Result, 5)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.Reserve(ctxT(t), "c1", "s1", fmt.Sprintf("req-%d", i), "alice")
			if err != nil {
				t.Error(err)
			}
			results[i] = res
		}()
	}
	wg.Wait()
	var accepted, already int
	var id string
	for _, r := range results {
		switch r.Outcome {
		case sku.OutcomeAccepted:
			accepted++
			id = r.Reservation.ReservationID
		case sku.OutcomeAlreadyPurchased:
			already++
		}
	}
	for _, r := range results {
		if r.Outcome == sku.OutcomeAlreadyPurchased && r.Reservation.ReservationID != id {
			t.Fatalf("ALREADY_PURCHASED names %q, want %q", r.Reservation.ReservationID, id)
		}
	}
	if accepted != 1 || already != 4 {
		t.Fatalf("accepted %d, already purchased %d", accepted, already)
	}
	if c := mustAudit(t, e).Counts; c.Reserved != 1 || c.Available != 9 {
		t.Fatalf("one token should be used: %+v", c)
	}
}

func TestSameRequestTenTimes(t *testing.T) {
	d := testDef(10)
	e := openTest(t, t.TempDir(), &fakeClock{}, &d)
	var wg sync.WaitGroup
	results := make([]sku.Result, 10)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.Reserve(ctxT(t), "c1", "s1", "same", "bob")
			if err != nil {
				t.Error(err)
			}
			results[i] = res
		}()
	}
	wg.Wait()
	for _, r := range results {
		r.Duplicate = false
		if r.Outcome != sku.OutcomeAccepted || r.Reservation.ReservationID != results[0].Reservation.ReservationID ||
			r.Reservation.TokenID != results[0].Reservation.TokenID || r.Reservation.ExpireAt != results[0].Reservation.ExpireAt {
			t.Fatalf("results differ: %+v vs %+v", r, results[0])
		}
	}
	if c := mustAudit(t, e).Counts; c.Reservations != 1 {
		t.Fatalf("%d reservations, want 1", c.Reservations)
	}
	res, err := e.Reserve(ctxT(t), "c1", "s1", "same", "mallory")
	if err != nil || res.Outcome != sku.OutcomeRequestIDReused {
		t.Fatalf("reuse by another user: %v %v", res.Outcome, err)
	}
}

// TestPaymentAgainstExpiry pays 1 ms before and 1 ms after expire_at, with
// the expiry step run before or after the payment, many times.
func TestPaymentAgainstExpiry(t *testing.T) {
	for round := 0; round < 20; round++ {
		for _, late := range []bool{false, true} {
			for _, expiryFirst := range []bool{false, true} {
				name := fmt.Sprintf("round%d/late=%v/expiryFirst=%v", round, late, expiryFirst)
				clock := &fakeClock{}
				d := testDef(1)
				e := openTest(t, t.TempDir(), clock, &d)
				res, err := e.Reserve(ctxT(t), "c1", "s1", "r1", "u1")
				if err != nil || res.Outcome != sku.OutcomeAccepted {
					t.Fatalf("%s: reserve %v %v", name, res.Outcome, err)
				}
				at := res.Reservation.ExpireAt - 1
				if late {
					at = res.Reservation.ExpireAt + 1
				}
				clock.Set(at)
				id := res.Reservation.ReservationID
				if expiryFirst {
					e.SKU("c1", "s1").expireNow(t)
				}
				pay, err := e.Pay(ctxT(t), id, "pay-1", 990)
				if err != nil {
					t.Fatal(err)
				}
				if !expiryFirst {
					e.SKU("c1", "s1").expireNow(t)
				}
				v, err := e.Get(ctxT(t), id)
				if err != nil {
					t.Fatal(err)
				}
				c := mustAudit(t, e).Counts
				if late {
					if pay.Outcome != sku.OutcomeRefundRequired || v.State != sku.StateClosed || !v.RefundRequired ||
						c.Available != 1 || c.RefundsRequired != 1 {
						t.Fatalf("%s: %s, %s refund=%v, counts %+v", name, pay.Outcome, v.State, v.RefundRequired, c)
					}
					// A repeat of the late payment changes nothing.
					again, _ := e.Pay(ctxT(t), id, "pay-1", 990)
					if again.Outcome != sku.OutcomeRefundRequired || mustAudit(t, e).Counts.RefundsRequired != 1 {
						t.Fatalf("%s: repeat of late payment recorded twice", name)
					}
				} else if pay.Outcome != sku.OutcomePaid || v.State != sku.StatePaid || c.Confirmed != 1 || c.Available != 0 {
					t.Fatalf("%s: %s, %s, counts %+v", name, pay.Outcome, v.State, c)
				}
				e.Close()
			}
		}
	}
}

// expireNow runs one expiry step through the mailbox and waits for it.
func (h *SKU) expireNow(t *testing.T) {
	t.Helper()
	h.engine.system.Root.Send(h.pid, tick{now: h.engine.cfg.Clock()})
	if _, err := h.engine.Audit(ctxT(t), h.campaignID, h.skuID); err != nil { // a barrier: same mailbox
		t.Fatal(err)
	}
}

func TestRestartKeepsState(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{}
	d := testDef(5)
	e := openTest(t, dir, clock, &d)
	var ids []string
	for i := 0; i < 7; i++ {
		res, err := e.Reserve(ctxT(t), "c1", "s1", fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome == sku.OutcomeAccepted {
			ids = append(ids, res.Reservation.ReservationID)
		}
	}
	if _, err := e.Pay(ctxT(t), ids[0], "p0", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Cancel(ctxT(t), ids[1]); err != nil {
		t.Fatal(err)
	}
	if err := e.Pause(ctxT(t), "c1", "s1"); err != nil {
		t.Fatal(err)
	}
	before := mustAudit(t, e)
	e.Close()

	e2 := openTest(t, dir, clock, nil)
	after := mustAudit(t, e2)
	if before.Counts != after.Counts {
		t.Fatalf("counts before %+v, after %+v", before.Counts, after.Counts)
	}
	if st := e2.SKU("c1", "s1").Stats(); !st.Paused || st.Counts != after.Counts {
		t.Fatalf("published stats after restart: %+v", st)
	}
	res, err := e2.Reserve(ctxT(t), "c1", "s1", "r6", "u6")
	if err != nil || res.Outcome != sku.OutcomeSoldOut || !res.Duplicate {
		t.Fatalf("durable SOLD_OUT for r6 lost: %v dup=%v %v", res.Outcome, res.Duplicate, err)
	}
	if res, _ := e2.Reserve(ctxT(t), "c1", "s1", "new", "u-new"); res.Outcome != sku.OutcomePaused {
		t.Fatalf("pause lost: %v", res.Outcome)
	}
	v, err := e2.Get(ctxT(t), ids[0])
	if err != nil || v.State != sku.StatePaid || v.PaymentID != "p0" {
		t.Fatalf("paid reservation after restart: %+v %v", v, err)
	}
}

func TestUnknownAndInvalid(t *testing.T) {
	d := testDef(5)
	e := openTest(t, t.TempDir(), &fakeClock{}, &d)
	if _, err := e.Reserve(ctxT(t), "c1", "nope", "r", "u"); !errors.Is(err, ErrUnknownSKU) {
		t.Fatalf("unknown SKU: %v", err)
	}
	if _, err := e.Reserve(ctxT(t), "c1", "s1", "bad id!", "u"); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("bad request id: %v", err)
	}
	if _, err := e.Get(ctxT(t), "garbage"); !errors.Is(err, sku.ErrBadReservationID) {
		t.Fatalf("bad reservation id: %v", err)
	}
	key := e.SKU("c1", "s1").Stats().Definition.IDKey
	if _, err := e.Get(ctxT(t), sku.FormatReservationID("c1", "s1", 99, key)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing reservation: %v", err)
	}
	bad := d
	bad.SaleLimit = 1
	if err := e.Define(ctxT(t), bad); !errors.Is(err, sku.ErrInvalidDefinition) {
		t.Fatalf("lowering sale_limit: %v", err)
	}
	more := d
	more.SaleLimit = 50
	if err := e.Define(ctxT(t), more); err != nil {
		t.Fatalf("raising sale_limit: %v", err)
	}
	if c := mustAudit(t, e).Counts; c.SaleLimit != 50 || c.Available != 50 {
		t.Fatalf("after raise: %+v", c)
	}
	// A reservation id is a capability: the right seq with another tag
	// names nothing, for reads and for commands.
	res, err := e.Reserve(ctxT(t), "c1", "s1", "r-tag", "u-tag")
	if err != nil || res.Outcome != sku.OutcomeAccepted {
		t.Fatalf("reserve: %v %v", res.Outcome, err)
	}
	_, _, seq, _, _ := sku.ParseReservationID(res.Reservation.ReservationID)
	forged := sku.FormatReservationID("c1", "s1", seq, [16]byte{1})
	if _, err := e.Get(ctxT(t), forged); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get with a forged tag: %v", err)
	}
	for _, cmd := range []func() (sku.Result, error){
		func() (sku.Result, error) { return e.Pay(ctxT(t), forged, "p-forged", 1) },
		func() (sku.Result, error) { return e.Cancel(ctxT(t), forged) },
		func() (sku.Result, error) { return e.Release(ctxT(t), forged) },
	} {
		if r, err := cmd(); err != nil || r.Outcome != sku.OutcomeNotFound {
			t.Fatalf("command with a forged tag: %v %v", r.Outcome, err)
		}
	}
	if v, err := e.Get(ctxT(t), res.Reservation.ReservationID); err != nil || v.State != sku.StatePendingPayment {
		t.Fatalf("the real id after forged attempts: %+v %v", v, err)
	}
}

// A panic in the actor makes protoactor's supervisor restart it; the new
// incarnation rebuilds the SKU from its log and goes on answering.
func TestActorRestartAfterPanicRecoversFromDisk(t *testing.T) {
	d := testDef(10)
	e := openTest(t, t.TempDir(), &fakeClock{}, &d)
	var ids []string
	for i := 0; i < 3; i++ {
		res, err := e.Reserve(ctxT(t), "c1", "s1", fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i))
		if err != nil || res.Outcome != sku.OutcomeAccepted {
			t.Fatalf("reserve: %v %v", res.Outcome, err)
		}
		ids = append(ids, res.Reservation.ReservationID)
	}
	before := mustAudit(t, e).Counts
	// A call of an unknown kind is a programming error: the actor panics
	// on it when it counts it in its metrics, after deciding it (it
	// changes nothing), so it waits on the log with the calls decided
	// before it. The calls after it are answered by the restarted actor.
	h := e.SKU("c1", "s1")
	bad := &call{Call: core.Call{Kind: core.Kind(200)}, done: make(chan struct{}, 1)}
	bad.Ref = bad
	batch := []*call{newReserveCall("b0", "ub0"), bad, newReserveCall("b1", "ub1"), newReserveCall("b2", "ub2")}
	postBatch(e, h, batch...)
	select {
	case <-bad.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the panicking call, decided before the panic, never answered")
	}
	for _, c := range []*call{batch[0], batch[2], batch[3]} {
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s of the panicking batch never answered", c.RequestID)
		}
		if c.Err != nil || c.Result.Outcome != sku.OutcomeAccepted {
			t.Fatalf("%s of the panicking batch: %v %v", c.RequestID, c.Result.Outcome, c.Err)
		}
		ids = append(ids, c.Result.Reservation.ReservationID)
	}
	before.Reservations += 3
	before.Available -= 3
	res, err := e.Reserve(ctxT(t), "c1", "s1", "after", "u-after")
	if err != nil || res.Outcome != sku.OutcomeAccepted {
		t.Fatalf("reserve after the restart: %v %v", res.Outcome, err)
	}
	if q := h.Stats().Queued; q != 0 {
		t.Fatalf("%d calls counted as waiting after every call was answered", q)
	}
	if n := h.WALStats().Records; n != 3 {
		t.Fatalf("%d records appended since the log was opened: want 3 (b1, b2, after), the log reopened by the restart", n)
	}
	after := mustAudit(t, e).Counts
	if after.Reservations != before.Reservations+1 || after.Available != before.Available-1 {
		t.Fatalf("counts before %+v, after the restart %+v", before, after)
	}
	for _, id := range ids {
		if v, err := e.Get(ctxT(t), id); err != nil || v.State != sku.StatePendingPayment {
			t.Fatalf("%s after the restart: %+v %v", id, v, err)
		}
	}
}

func newReserveCall(requestID, userID string) *call {
	c := newCall(core.KindReserve)
	c.RequestID, c.UserID = requestID, userID
	return c
}

// postBatch puts calls into h's inbox at once, so that one drain takes
// them all as one batch.
func postBatch(e *Engine, h *SKU, calls ...*call) {
	h.in.mu.Lock()
	for _, c := range calls {
		c.enqueuedAt = monoNow()
		h.in.calls = append(h.in.calls, c)
		h.in.items.Add(1)
	}
	send := !h.in.posted
	h.in.posted = true
	h.in.mu.Unlock()
	if send {
		e.system.Root.Send(h.pid, drain{})
	}
}

// A SKU being created (its actor started, its definition not yet durable)
// is not a SKU to callers: no handle, ErrUnknownSKU, rather than the empty
// figures of a SKU without a window (which read as ended and sold out).
func TestSKUIsUnknownUntilItsDefinitionIsDurable(t *testing.T) {
	e := openTest(t, t.TempDir(), &fakeClock{}, nil)
	h, err := e.handleFor("c1", "s1") // what Define does first
	if err != nil {
		t.Fatal(err)
	}
	if got := e.SKU("c1", "s1"); got != nil {
		t.Fatalf("a SKU without a definition is visible: %+v", got.Stats())
	}
	if _, err := e.Reserve(ctxT(t), "c1", "s1", "r1", "u1"); !errors.Is(err, ErrUnknownSKU) {
		t.Fatalf("reserve before the definition: %v, want ErrUnknownSKU", err)
	}
	if _, err := e.Audit(ctxT(t), "c1", "s1"); !errors.Is(err, ErrUnknownSKU) {
		t.Fatalf("audit before the definition: %v, want ErrUnknownSKU", err)
	}
	d := testDef(5)
	if err := e.Define(ctxT(t), d); err != nil {
		t.Fatal(err)
	}
	if got := e.SKU("c1", "s1"); got != h {
		t.Fatalf("after Define: handle %p, want %p", got, h)
	}
	if res, err := e.Reserve(ctxT(t), "c1", "s1", "r1", "u1"); err != nil || res.Outcome != sku.OutcomeAccepted {
		t.Fatalf("reserve after the definition: %v %v", res.Outcome, err)
	}
}

// A SKU defined while the engine closes is either refused (ErrClosed) or
// stopped by Close: no actor may keep its log open, and write, once Close
// has returned and released the data dir to another engine.
func TestCloseDuringDefine(t *testing.T) {
	for round := 0; round < 50; round++ {
		dir := t.TempDir()
		e, err := Open(Config{DataDir: dir, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().UnixMilli()
		d := sku.Definition{CampaignID: "c", SKUID: fmt.Sprintf("s%d", round), StartAt: now, EndAt: now + 3_600_000,
			PaymentWindowMs: 60_000, SaleLimit: 10}
		defined := make(chan error, 1)
		go func() { defined <- e.Define(context.Background(), d) }()
		time.Sleep(time.Duration(round%10) * 100 * time.Microsecond) // into the folder's fsyncs
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		err = <-defined
		if err != nil && !errors.Is(err, ErrClosed) {
			t.Fatalf("round %d: Define during Close: %v", round, err)
		}
		for _, h := range e.SKUs() {
			if l := h.log.Load(); l != nil && l.Err() == nil {
				t.Fatalf("round %d: the SKU's log is still open after Close (Define: %v)", round, err)
			}
		}
	}
}
