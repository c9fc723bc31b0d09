package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/wal"
)

// held holds the engine calls a test picks until it releases them: each
// announces itself on arrived when it is held, so the test orders its next
// step against the engine's progress instead of sleeping.
type held struct {
	arrived chan engineCall
	release chan struct{}
}

func newHeld() *held {
	return &held{arrived: make(chan engineCall, 64), release: make(chan struct{})}
}

// hold announces c and waits for the release (or the caller's deadline).
func (h *held) hold(ctx context.Context, c engineCall) error {
	h.arrived <- c
	select {
	case <-h.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitArrivals waits until n held calls have arrived.
func (h *held) waitArrivals(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for i := 0; i < n; i++ {
		select {
		case <-h.arrived:
		case <-timeout:
			t.Fatalf("%d of %d held calls arrived", i, n)
		}
	}
}

// sendReserves sends n reserves at once, req(i) giving the ids, and
// returns the channel their answers arrive on, in the order they come.
func sendReserves(t *testing.T, base, campaignID, skuID string, n int, req func(i int) (requestID, userID string)) <-chan response {
	answers := make(chan response, n)
	for i := 0; i < n; i++ {
		go func() {
			requestID, userID := req(i)
			r, err := tryReserve(base, campaignID, skuID, requestID, userID)
			if err != nil {
				t.Error(err)
			}
			answers <- r
		}()
	}
	return answers
}

// When the actor falls behind, admission stops at
// consumer_rate × max_queue_wait permits and the rest get 429 QUEUE_FULL
// with Retry-After; the status reads QUEUE_FULL meanwhile. The engine holds
// the admitted reserves until every refused one is answered.
func TestQueueFullWhenSlow(t *testing.T) {
	t.Parallel()
	faults := &faultEngine{}
	ts := startServer(t, serverOptions{
		faults: faults,
		config: func(c *httpapi.Config) {
			c.MaxQueueWait = 100 * time.Millisecond
			c.MinConsumerRate = 50 // 5 permits in flight
		},
	})
	faults.setLoad("slow", "s", skuLoad{}) // its permits are the bound's, however slow the disk
	ts.define(campaign("slow", "15m", map[string]int{"s": 1000}))
	slow := newHeld()
	faults.setHooks(hooks{before: func(ctx context.Context, c engineCall) error {
		if c.kind != kindReserve {
			return nil
		}
		return slow.hold(ctx, c)
	}})

	answers := sendReserves(t, ts.base, "slow", "s", 30, func(i int) (string, string) {
		return fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i)
	})
	slow.waitArrivals(t, 5)
	for i := 0; i < 25; i++ {
		r := <-answers
		want(t, r, http.StatusTooManyRequests, "QUEUE_FULL")
		if r.header.Get("Retry-After") != "1" {
			t.Errorf("429 Retry-After %q", r.header.Get("Retry-After"))
		}
	}
	if st := ts.get("/v1/campaigns/slow/skus/s").str("status"); st != "QUEUE_FULL" {
		t.Fatalf("status with every permit held: %s", st)
	}
	close(slow.release)
	for i := 0; i < 5; i++ {
		want(t, <-answers, http.StatusAccepted, "")
	}
	if st := ts.get("/v1/campaigns/slow/skus/s").str("status"); st != "OPEN" {
		t.Fatalf("status after the load: %s", st)
	}
	if m := ts.get("/metrics"); !strings.Contains(string(m.raw), `seckill_ingress_rejections_total{layer="queue_full"} 25`) {
		t.Fatalf("queue_full rejections not counted:\n%s", grepLines(string(m.raw), "seckill_ingress_rejections_total"))
	}
}

// A reserve the engine decides but answers too late for the handler
// answers 504 RESULT_UNKNOWN with the request's status URL; polling it
// shows the reservation, and retrying the same request_id returns it (even
// though the SKU now looks sold out to the fast path) instead of making a
// second.
func TestResultUnknown(t *testing.T) {
	t.Parallel()
	faults := &faultEngine{}
	ts := startServer(t, serverOptions{
		faults: faults,
		config: func(c *httpapi.Config) { c.RequestTimeout = 2 * time.Second }, // the poll reads the disk too
	})
	ts.define(campaign("unk", "15m", map[string]int{"s": 1}))
	faults.setHooks(hooks{decided: func(ctx context.Context, c engineCall, res sku.Result) error {
		if c.kind == kindReserve && c.requestID == "r1" && !res.Duplicate {
			<-ctx.Done() // decided; the answer comes after the handler gave up
			return ctx.Err()
		}
		return nil
	}})

	r := ts.reserve("unk", "s", "r1", "u1")
	want(t, r, http.StatusGatewayTimeout, "RESULT_UNKNOWN")
	if r.str("status_url") != "/v1/campaigns/unk/skus/s/requests/r1" {
		t.Fatalf("504 body: %v", r)
	}
	polled := ts.get(r.str("status_url"))
	if polled.status != http.StatusOK || polled.str("outcome") != "ACCEPTED" {
		t.Fatalf("poll: %v", polled)
	}
	if st := ts.get("/v1/campaigns/unk/skus/s").str("status"); st != "TEMP_SOLD_OUT" {
		t.Fatalf("status: %s", st)
	}
	retry := ts.reserve("unk", "s", "r1", "u1")
	want(t, retry, http.StatusAccepted, "")
	if retry.str("reservation_id") != polled.str("reservation_id") {
		t.Fatalf("retry %v, poll %v", retry, polled)
	}
	want(t, ts.reserve("unk", "s", "r2", "u2"), http.StatusConflict, "SOLD_OUT")
	if a := ts.audit("unk", "s"); num(a, "reservations") != 1 {
		t.Fatalf("audit: %v", a)
	}
}

// A reserve decided just before its SKU's log failed may be on disk or
// not (actors.ErrResultUnknown): 504 RESULT_UNKNOWN with the status_url to
// poll, never 503 UNAVAILABLE, which says nothing was done. One refused
// before any decision (actors.ErrUnavailable) is 503, and nothing is
// recorded for it.
func TestLogFailureAfterDecisionIsResultUnknown(t *testing.T) {
	t.Parallel()
	faults := &faultEngine{}
	ts := startServer(t, serverOptions{faults: faults})
	ts.define(campaign("lf", "15m", map[string]int{"s": 5}))
	faults.setHooks(hooks{
		before: func(_ context.Context, c engineCall) error {
			if c.kind == kindReserve && c.requestID == "r2" {
				return fmt.Errorf("lf/s: %w", actors.ErrUnavailable)
			}
			return nil
		},
		decided: func(_ context.Context, c engineCall, res sku.Result) error {
			if c.kind == kindReserve && c.requestID == "r1" && !res.Duplicate {
				return fmt.Errorf("lf/s: %w", actors.ErrResultUnknown)
			}
			return nil
		},
	})
	r := ts.reserve("lf", "s", "r1", "u1")
	want(t, r, http.StatusGatewayTimeout, "RESULT_UNKNOWN")
	if r.str("status_url") != "/v1/campaigns/lf/skus/s/requests/r1" {
		t.Fatalf("504 body: %v", r)
	}
	if polled := ts.get(r.str("status_url")); polled.str("outcome") != "ACCEPTED" {
		t.Fatalf("poll of the decided reserve: %v", polled)
	}
	want(t, ts.reserve("lf", "s", "r2", "u2"), http.StatusServiceUnavailable, "UNAVAILABLE")
	want(t, ts.get("/v1/campaigns/lf/skus/s/requests/r2"), http.StatusNotFound, "NOT_FOUND")
}

// A repeat of a request_id sent while the first is in flight shares its
// answer only if that answer cannot have gone stale meanwhile: here the
// first is decided ALREADY_PURCHASED and its answer held, the user's
// purchase is cancelled, and only then the repeat is sent and joins the
// flight; it must not hear ALREADY_PURCHASED (the race the porcupine test
// found, ordered by hooks).
func TestRepeatDuringFlightGetsNoStaleAnswer(t *testing.T) {
	t.Parallel()
	faults := &faultEngine{}
	ts := startServer(t, serverOptions{faults: faults})
	ts.define(campaign("rep", "15m", map[string]int{"s": 5}))
	first := ts.reserve("rep", "s", "r0", "u")
	want(t, first, http.StatusAccepted, "")
	answer := newHeld()
	var once sync.Once
	faults.setHooks(hooks{decided: func(ctx context.Context, c engineCall, res sku.Result) error {
		if c.kind != kindReserve || res.Outcome != sku.OutcomeAlreadyPurchased {
			return nil
		}
		err := error(nil)
		once.Do(func() { err = answer.hold(ctx, c) }) // only the first: a stale repeat must not hang
		return err
	}})

	lead := sendReserves(t, ts.base, "rep", "s", 1, func(int) (string, string) { return "r1", "u" })
	answer.waitArrivals(t, 1) // r1 decided ALREADY_PURCHASED, its answer held
	want(t, ts.post("/v1/reservations/"+first.str("reservation_id")+"/cancel", nil), http.StatusOK, "")
	repeat := sendReserves(t, ts.base, "rep", "s", 1, func(int) (string, string) { return "r1", "u" })
	eventually(t, 2*time.Minute, "the repeat joins r1's flight", func() bool {
		return httpapi.HasFollower(ts.srv, "rep", "s", "u")
	})
	close(answer.release)
	want(t, <-lead, http.StatusConflict, "ALREADY_PURCHASED")
	want(t, <-repeat, http.StatusAccepted, "")
}

// A handler panic is answered 500 INTERNAL and the server lives on.
func TestPanicRecovery(t *testing.T) {
	t.Parallel()
	faults := &faultEngine{}
	ts := startServer(t, serverOptions{faults: faults})
	ts.define(campaign("pan", "15m", map[string]int{"s": 1}))
	id := ts.reserve("pan", "s", "r1", "u1").str("reservation_id")
	var panicOnGet atomic.Bool
	faults.setHooks(hooks{before: func(_ context.Context, c engineCall) error {
		if c.kind == kindGet && panicOnGet.Load() {
			panic("injected")
		}
		return nil
	}})
	panicOnGet.Store(true)
	want(t, ts.get("/v1/reservations/"+id), http.StatusInternalServerError, "INTERNAL")
	panicOnGet.Store(false)
	want(t, ts.get("/v1/reservations/"+id), http.StatusOK, "")
	want(t, ts.get("/healthz"), http.StatusOK, "")
}

func grepLines(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// *actors.Engine is the engine the service is built for; faultEngine
// stands in front of it in the fault tests.
var (
	_ httpapi.Engine = (*actors.Engine)(nil)
	_ httpapi.Engine = (*faultEngine)(nil)
)

// The snapshot route snapshots the SKU through the engine.
func TestSnapshotRoute(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	ts.define(campaign("snap", "15m", map[string]int{"s": 5}))
	want(t, ts.reserve("snap", "s", "r1", "u1"), http.StatusAccepted, "")
	r := ts.admin(http.MethodPost, "/admin/campaigns/snap/skus/s/snapshot", nil)
	info, _ := r.body["snapshot"].(map[string]any)
	if r.status != http.StatusOK || info["index"] != float64(2) || info["reservations"] != float64(1) {
		t.Fatalf("snapshot: %v", r)
	}
	want(t, ts.admin(http.MethodPost, "/admin/campaigns/snap/skus/nope/snapshot", nil), http.StatusNotFound, "NOT_FOUND")
	want(t, call(t, http.MethodPost, ts.base+"/admin/campaigns/snap/skus/s/snapshot", nil, nil), http.StatusUnauthorized, "UNAUTHORIZED")
}

// Permits held by requests the engine will refuse (holders clicking again)
// make a newcomer wait (429 QUEUE_FULL), never hear SOLD_OUT while units
// are available; once they are answered, the newcomer gets a unit.
func TestOutOfPermitsIsBusyNotSoldOut(t *testing.T) {
	t.Parallel()
	faults := &faultEngine{}
	ts := startServer(t, serverOptions{
		faults: faults,
		config: func(c *httpapi.Config) { c.RetryMargin = 1 },
	})
	faults.setLoad("busy", "s", skuLoad{}) // its permits are the bound's, however slow the disk
	ts.define(campaign("busy", "15m", map[string]int{"s": 10}))
	for i := 1; i <= 6; i++ {
		want(t, ts.reserve("busy", "s", fmt.Sprintf("h%d-a", i), fmt.Sprintf("holder-%d", i)), http.StatusAccepted, "")
	}
	// 4 available, 5 permits: five of six holders clicking again hold
	// them all, in the engine; the sixth is refused at once.
	again := newHeld()
	faults.setHooks(hooks{before: func(ctx context.Context, c engineCall) error {
		if c.kind == kindReserve && strings.HasSuffix(c.requestID, "-b") {
			return again.hold(ctx, c)
		}
		return nil
	}})
	answers := sendReserves(t, ts.base, "busy", "s", 6, func(i int) (string, string) {
		return fmt.Sprintf("h%d-b", i+1), fmt.Sprintf("holder-%d", i+1)
	})
	again.waitArrivals(t, 5)
	want(t, <-answers, http.StatusTooManyRequests, "QUEUE_FULL")
	want(t, ts.reserve("busy", "s", "n-1", "newcomer"), http.StatusTooManyRequests, "QUEUE_FULL")
	close(again.release)
	for i := 0; i < 5; i++ {
		want(t, <-answers, http.StatusConflict, "ALREADY_PURCHASED")
	}
	want(t, ts.reserve("busy", "s", "n-1", "newcomer"), http.StatusAccepted, "")
}

// A SKU whose log fails recovery (a damaged record followed by valid ones)
// is unavailable: its status, its reserves and its reads answer 503
// UNAVAILABLE, /readyz names it (200 degraded), and the other SKUs serve on.
func TestUnavailableSKU(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ts := startServer(t, serverOptions{dir: dir})
	ts.define(campaign("down", "15m", map[string]int{"bad": 50, "good": 50}))
	var id string
	for i := 0; i < 20; i++ { // one record each, so the log has many
		id = ts.reserve("down", "bad", fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i)).str("reservation_id")
	}
	ts.stop()
	segments, err := wal.Segments(filepath.Join(dir, "down", "bad", "wal"))
	if err != nil || len(segments) == 0 {
		t.Fatalf("segments: %v %v", segments, err)
	}
	data, err := os.ReadFile(segments[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x20
	if err := os.WriteFile(segments[0].Path, data, 0o640); err != nil {
		t.Fatal(err)
	}

	ts2 := startServer(t, serverOptions{dir: dir})
	st := ts2.get("/v1/campaigns/down/skus/bad")
	want(t, st, http.StatusServiceUnavailable, "UNAVAILABLE")
	if st.body["status"] != nil {
		t.Fatalf("an unavailable SKU claims a status: %v", st)
	}
	want(t, ts2.reserve("down", "bad", "r-new", "u-new"), http.StatusServiceUnavailable, "UNAVAILABLE")
	want(t, ts2.get("/v1/reservations/"+id), http.StatusServiceUnavailable, "UNAVAILABLE")
	// Every route that asks the SKU, the operator's too, says when to try
	// again (Retry-After), as a reserve's 503 does.
	for _, r := range []struct{ method, path string }{
		{http.MethodPost, "/v1/campaigns/down/skus/bad/reservations"},
		{http.MethodGet, "/v1/reservations/" + id},
		{http.MethodGet, "/admin/campaigns/down/skus/bad/audit"},
		{http.MethodGet, "/admin/campaigns/down/skus/bad/refunds"},
		{http.MethodPost, "/admin/campaigns/down/skus/bad/snapshot"},
		{http.MethodPost, "/admin/campaigns/down/skus/bad/pause"},
		{http.MethodPost, "/admin/campaigns/down/skus/bad/resume"},
		{http.MethodGet, "/admin/campaigns/down/skus/bad/events"},
		{http.MethodGet, "/admin/campaigns/down/skus/bad/reservations"},
	} {
		var body any
		if r.path == "/v1/campaigns/down/skus/bad/reservations" {
			body = map[string]string{"request_id": "r-again", "user_id": "u-again"}
		}
		got := ts2.admin(r.method, r.path, body)
		if got.status != http.StatusServiceUnavailable || got.header.Get("Retry-After") != "1" {
			t.Errorf("%s %s on an unavailable SKU: %v, Retry-After %q, want 503 with Retry-After 1", r.method, r.path, got, got.header.Get("Retry-After"))
		}
	}
	// The node stays in rotation (the good SKU lives only here), degraded.
	ready := ts2.get("/readyz")
	want(t, ready, http.StatusOK, "")
	if ready.str("status") != "degraded" || !strings.Contains(string(ready.raw), `"unavailable":["down/bad"]`) {
		t.Fatalf("readyz: %v", ready)
	}
	if g := ts2.get("/v1/campaigns/down/skus/good"); g.status != http.StatusOK || g.str("status") != "OPEN" {
		t.Fatalf("the other SKU: %v", g)
	}
}
