package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/wal"
)

// faultyEngine is the real engine with injectable faults: a slow reserve
// (the command is still applied, only late, as when the actor is behind)
// and a panicking Get.
type faultyEngine struct {
	*actors.Engine
	reserveDelay atomic.Int64 // nanoseconds; 0: no delay
	slowCalls    atomic.Int64 // how many more reserves are slowed (<0: all)
	panicOnGet   atomic.Bool
	reserveErr   atomic.Pointer[error] // answered instead of reserving, once
	replyDelay   atomic.Int64          // nanoseconds a reserve's answer is held after the engine decided, once
}

func (f *faultyEngine) Reserve(ctx context.Context, campaignID, skuID, requestID, userID string) (sku.Result, error) {
	if err := f.reserveErr.Swap(nil); err != nil {
		return sku.Result{}, *err
	}
	if d := time.Duration(f.replyDelay.Swap(0)); d > 0 {
		res, err := f.Engine.Reserve(ctx, campaignID, skuID, requestID, userID)
		time.Sleep(d)
		return res, err
	}
	d := time.Duration(f.reserveDelay.Load())
	if d == 0 || !f.takeSlowCall() {
		return f.Engine.Reserve(ctx, campaignID, skuID, requestID, userID)
	}
	type answer struct {
		res sku.Result
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		time.Sleep(d)
		res, err := f.Engine.Reserve(context.Background(), campaignID, skuID, requestID, userID)
		ch <- answer{res, err}
	}()
	select {
	case a := <-ch:
		return a.res, a.err
	case <-ctx.Done():
		return sku.Result{}, ctx.Err()
	}
}

// takeSlowCall reports whether this reserve is to be slowed, counting it.
func (f *faultyEngine) takeSlowCall() bool {
	for {
		n := f.slowCalls.Load()
		switch {
		case n < 0:
			return true
		case n == 0:
			return false
		case f.slowCalls.CompareAndSwap(n, n-1):
			return true
		}
	}
}

func (f *faultyEngine) Get(ctx context.Context, reservationID string) (sku.View, error) {
	if f.panicOnGet.Load() {
		panic("injected")
	}
	return f.Engine.Get(ctx, reservationID)
}

// When the actor falls behind, admission stops at
// consumer_rate × max_queue_wait permits and the rest get 429 QUEUE_FULL
// with Retry-After; the status reads QUEUE_FULL meanwhile.
func TestQueueFullWhenSlow(t *testing.T) {
	t.Parallel()
	fe := &faultyEngine{}
	ts := startServer(t, serverOptions{
		wrap: func(e *actors.Engine) httpapi.Engine { fe.Engine = e; return fe },
		config: func(c *httpapi.Config) {
			c.MaxQueueWait = 100 * time.Millisecond
			c.MinConsumerRate = 50 // 5 permits in flight
		},
	})
	ts.define(campaign("slow", "15m", map[string]int{"s": 1000}))
	fe.slowCalls.Store(-1)
	fe.reserveDelay.Store(int64(500 * time.Millisecond))

	done := make(chan []response)
	go func() {
		out := make([]response, 30)
		parallel(30, func(i int) {
			out[i], _ = tryReserve(ts.base, "slow", "s", fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i))
		})
		done <- out
	}()
	eventually(t, 2*time.Second, "status QUEUE_FULL", func() bool {
		return ts.get("/v1/campaigns/slow/skus/s").str("status") == "QUEUE_FULL"
	})
	out := <-done
	accepted, full := 0, 0
	for _, r := range out {
		switch {
		case r.status == http.StatusAccepted:
			accepted++
		case r.status == http.StatusTooManyRequests && r.str("error") == "QUEUE_FULL":
			full++
			if r.header.Get("Retry-After") != "1" {
				t.Errorf("429 Retry-After %q", r.header.Get("Retry-After"))
			}
		default:
			t.Errorf("unexpected answer %v", r)
		}
	}
	if accepted < 1 || accepted > 5 || full != 30-accepted {
		t.Fatalf("%d accepted, %d QUEUE_FULL; want 1-5 admitted, the rest refused", accepted, full)
	}
	fe.reserveDelay.Store(0)
	if st := ts.get("/v1/campaigns/slow/skus/s").str("status"); st != "OPEN" {
		t.Fatalf("status after the load: %s", st)
	}
	if m := ts.get("/metrics"); !strings.Contains(string(m.raw), `seckill_ingress_rejections_total{layer="queue_full"} `+fmt.Sprint(full)) {
		t.Fatalf("queue_full rejections not counted:\n%s", grepLines(string(m.raw), "seckill_ingress_rejections_total"))
	}
}

// A reserve the engine applies too late for the handler answers 504
// RESULT_UNKNOWN with the request's status URL; polling it shows the
// reservation, and retrying the same request_id returns it (even though the
// SKU now looks sold out to the fast path) instead of making a second.
func TestResultUnknown(t *testing.T) {
	t.Parallel()
	fe := &faultyEngine{}
	ts := startServer(t, serverOptions{
		wrap:   func(e *actors.Engine) httpapi.Engine { fe.Engine = e; return fe },
		config: func(c *httpapi.Config) { c.RequestTimeout = 200 * time.Millisecond },
	})
	ts.define(campaign("unk", "15m", map[string]int{"s": 1}))
	fe.reserveDelay.Store(int64(600 * time.Millisecond))
	fe.slowCalls.Store(1)

	r := ts.reserve("unk", "s", "r1", "u1")
	want(t, r, http.StatusGatewayTimeout, "RESULT_UNKNOWN")
	if r.str("status_url") != "/v1/campaigns/unk/skus/s/requests/r1" {
		t.Fatalf("504 body: %v", r)
	}
	var polled response
	eventually(t, 3*time.Second, "the late reservation", func() bool {
		polled = ts.get(r.str("status_url"))
		return polled.status == http.StatusOK
	})
	if polled.str("outcome") != "ACCEPTED" {
		t.Fatalf("poll: %v", polled)
	}
	eventually(t, 2*time.Second, "sold out", func() bool {
		return ts.get("/v1/campaigns/unk/skus/s").str("status") == "TEMP_SOLD_OUT"
	})
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
// poll, never 503 UNAVAILABLE, which says nothing was done.
func TestLogFailureAfterDecisionIsResultUnknown(t *testing.T) {
	t.Parallel()
	fe := &faultyEngine{}
	ts := startServer(t, serverOptions{wrap: func(e *actors.Engine) httpapi.Engine { fe.Engine = e; return fe }})
	ts.define(campaign("lf", "15m", map[string]int{"s": 5}))
	err := fmt.Errorf("lf/s: %w", actors.ErrResultUnknown)
	fe.reserveErr.Store(&err)
	r := ts.reserve("lf", "s", "r1", "u1")
	want(t, r, http.StatusGatewayTimeout, "RESULT_UNKNOWN")
	if r.str("status_url") != "/v1/campaigns/lf/skus/s/requests/r1" {
		t.Fatalf("504 body: %v", r)
	}
	unavailable := fmt.Errorf("lf/s: %w", actors.ErrUnavailable)
	fe.reserveErr.Store(&unavailable)
	want(t, ts.reserve("lf", "s", "r2", "u2"), http.StatusServiceUnavailable, "UNAVAILABLE")
}

// A repeat of a request_id sent while the first is in flight shares its
// answer only if that answer cannot have gone stale meanwhile: here the
// first is decided ALREADY_PURCHASED, the user's purchase is cancelled,
// and only then the repeat is sent; it must not hear ALREADY_PURCHASED
// (the race the porcupine test found, made deterministic).
func TestRepeatDuringFlightGetsNoStaleAnswer(t *testing.T) {
	t.Parallel()
	fe := &faultyEngine{}
	ts := startServer(t, serverOptions{wrap: func(e *actors.Engine) httpapi.Engine { fe.Engine = e; return fe }})
	ts.define(campaign("rep", "15m", map[string]int{"s": 5}))
	first := ts.reserve("rep", "s", "r0", "u")
	want(t, first, http.StatusAccepted, "")
	fe.replyDelay.Store(int64(400 * time.Millisecond))
	lead := make(chan response, 1)
	go func() { lead <- ts.reserve("rep", "s", "r1", "u") }()
	time.Sleep(100 * time.Millisecond) // r1 decided ALREADY_PURCHASED, its answer held
	want(t, ts.post("/v1/reservations/"+first.str("reservation_id")+"/cancel", nil), http.StatusOK, "")
	repeat := ts.reserve("rep", "s", "r1", "u") // joins r1's flight
	if l := <-lead; l.status != http.StatusConflict || l.str("error") != "ALREADY_PURCHASED" {
		t.Fatalf("the held answer: %v", l)
	}
	want(t, repeat, http.StatusAccepted, "")
}

// A handler panic is answered 500 INTERNAL and the server lives on.
func TestPanicRecovery(t *testing.T) {
	t.Parallel()
	fe := &faultyEngine{}
	ts := startServer(t, serverOptions{wrap: func(e *actors.Engine) httpapi.Engine { fe.Engine = e; return fe }})
	ts.define(campaign("pan", "15m", map[string]int{"s": 1}))
	id := ts.reserve("pan", "s", "r1", "u1").str("reservation_id")
	fe.panicOnGet.Store(true)
	want(t, ts.get("/v1/reservations/"+id), http.StatusInternalServerError, "INTERNAL")
	fe.panicOnGet.Store(false)
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

// *actors.Engine is the engine the service is built for.
var _ httpapi.Engine = (*actors.Engine)(nil)

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
	fe := &faultyEngine{}
	ts := startServer(t, serverOptions{
		wrap:   func(e *actors.Engine) httpapi.Engine { fe.Engine = e; return fe },
		config: func(c *httpapi.Config) { c.RetryMargin = 1 },
	})
	ts.define(campaign("busy", "15m", map[string]int{"s": 10}))
	for i := 1; i <= 6; i++ {
		want(t, ts.reserve("busy", "s", fmt.Sprintf("h%d-a", i), fmt.Sprintf("holder-%d", i)), http.StatusAccepted, "")
	}
	// 4 available, 5 permits: six holders clicking again hold them all.
	fe.reserveDelay.Store(int64(time.Second))
	fe.slowCalls.Store(6)
	done := make(chan response, 6)
	for i := 1; i <= 6; i++ {
		go func() {
			r, err := tryReserve(ts.base, "busy", "s", fmt.Sprintf("h%d-b", i), fmt.Sprintf("holder-%d", i))
			if err != nil {
				t.Error(err)
			}
			done <- r
		}()
	}
	time.Sleep(300 * time.Millisecond)
	want(t, ts.reserve("busy", "s", "n-1", "newcomer"), http.StatusTooManyRequests, "QUEUE_FULL")
	for i := 0; i < 6; i++ {
		r := <-done
		if !(r.status == http.StatusConflict && r.str("error") == "ALREADY_PURCHASED") &&
			!(r.status == http.StatusTooManyRequests && r.str("error") == "QUEUE_FULL") {
			t.Errorf("holder clicking again: %v", r)
		}
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
