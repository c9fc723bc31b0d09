package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/httpapi"
)

const testToken = "test-admin-token"

// testServer is a real server on a free loopback port, on the real engine
// (a temp data dir), behind a faultEngine when serverOptions.faults is set.
type testServer struct {
	t      *testing.T
	base   string
	dir    string
	engine *actors.Engine
	srv    *httpapi.Server
	served chan error
	closed bool
}

// serverOptions tune startServer.
type serverOptions struct {
	dir    string
	config func(*httpapi.Config)
	// engine tunes the engine's Config (MaxSKUs, ...).
	engine func(*actors.Config)
	// faults, when set, stands between the server and the engine: its
	// hooks inject faults and orderings (faultengine_test.go).
	faults *faultEngine
	// listen, when set, wraps the server's listener (socket options of
	// the connections it accepts).
	listen func(net.Listener) net.Listener
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func startServer(t *testing.T, o serverOptions) *testServer {
	t.Helper()
	if o.dir == "" {
		o.dir = t.TempDir()
	}
	reg := prometheus.NewRegistry()
	log := testLogger(t)
	ecfg := actors.Config{DataDir: o.dir, Logger: log, Registerer: reg}
	if o.engine != nil {
		o.engine(&ecfg)
	}
	eng, err := actors.Open(ecfg)
	if err != nil {
		t.Fatalf("actors.Open: %v", err)
	}
	// As seckilld wires it: the engine serves the lotteries and the feed.
	cfg := httpapi.Config{Engine: eng, Lotteries: eng, Feed: feed.New(eng), AdminToken: testToken, Logger: log, Registry: reg}
	if o.faults != nil {
		o.faults.Engine = eng
		cfg.Engine, cfg.Feed = o.faults, feed.New(o.faults)
	}
	if o.config != nil {
		o.config(&cfg)
	}
	srv, err := httpapi.New(cfg)
	if err != nil {
		eng.Close()
		t.Fatalf("httpapi.New: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		eng.Close()
		t.Fatal(err)
	}
	if o.listen != nil {
		ln = o.listen(ln)
	}
	ts := &testServer{t: t, base: "http://" + ln.Addr().String(), dir: o.dir, engine: eng, srv: srv, served: make(chan error, 1)}
	go func() { ts.served <- srv.Serve(ln) }()
	t.Cleanup(ts.stop)
	return ts
}

// stop shuts the server down gracefully and closes the engine.
func (ts *testServer) stop() {
	if ts.closed {
		return
	}
	ts.closed = true
	// fasthttp counts a connection that never carried a request as idle
	// only after 5 s (as net/http does): close the client's spare ones so
	// that Shutdown need not wait for them.
	client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound for a hung shutdown
	defer cancel()
	if err := ts.srv.Shutdown(ctx); err != nil {
		ts.t.Errorf("Shutdown: %v", err)
	}
	if err := <-ts.served; err != nil {
		ts.t.Errorf("Serve: %v", err)
	}
	if err := ts.engine.Close(); err != nil {
		ts.t.Errorf("engine.Close: %v", err)
	}
}

// tickUntil ticks the engine (actors.Config.ManualTick) at now until the
// SKU's activity satisfies done: a tick is a message its actor takes in
// its own time, so the test waits for what it did. Then it reads through
// the actor: that answer waits until what the ticks decided is durable
// and published (the SKU's stats).
func (ts *testServer) tickUntil(now time.Time, campaignID, skuID, what string, done func(actors.Activity) bool) actors.Activity {
	ts.t.Helper()
	h := ts.engine.SKU(campaignID, skuID)
	if h == nil {
		ts.t.Fatalf("tick: no SKU %s/%s", campaignID, skuID)
	}
	var a actors.Activity
	eventually(ts.t, time.Minute, what, func() bool {
		ts.engine.Tick(now)
		a = h.Activity()
		return done(a)
	})
	if _, err := ts.engine.Refunds(context.Background(), campaignID, skuID); err != nil {
		ts.t.Fatalf("a read after the ticks: %v", err)
	}
	return a
}

// client is shared by the tests; it keeps enough idle connections for the
// concurrent ones.
var client = &http.Client{
	Timeout:   20 * time.Second,
	Transport: &http.Transport{MaxIdleConnsPerHost: 128, MaxConnsPerHost: 256},
}

// response is a decoded answer.
type response struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

func (r response) str(key string) string {
	v, _ := r.body[key].(string)
	return v
}

func (r response) String() string {
	return fmt.Sprintf("%d %s", r.status, bytes.TrimSpace(r.raw))
}

// call sends one request; body may be a string, []byte or a value to
// encode as JSON. It fails the test on a transport error, so it is for the
// test goroutine; concurrent requests use try.
func call(t testing.TB, method, url string, body any, header map[string]string) response {
	t.Helper()
	r, err := try(method, url, body, header)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// try sends one request and decodes the answer.
func try(method, url string, body any, header map[string]string) (response, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		js, err := json.Marshal(b)
		if err != nil {
			return response{}, err
		}
		rd = bytes.NewReader(js)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return response{}, err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: reading: %w", method, url, err)
	}
	r := response{status: resp.StatusCode, header: resp.Header, raw: raw}
	if len(raw) > 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &r.body); err != nil {
			return r, fmt.Errorf("%s %s: body is not a JSON object: %q", method, url, raw)
		}
	}
	return r, nil
}

func (ts *testServer) get(path string) response {
	return call(ts.t, http.MethodGet, ts.base+path, nil, nil)
}

func (ts *testServer) post(path string, body any) response {
	return call(ts.t, http.MethodPost, ts.base+path, body, nil)
}

func (ts *testServer) admin(method, path string, body any) response {
	return call(ts.t, method, ts.base+path, body, map[string]string{"Authorization": "Bearer " + testToken})
}

// tryReserve posts a reservation request (safe in any goroutine).
func tryReserve(base, campaignID, skuID, requestID, userID string) (response, error) {
	return try(http.MethodPost, base+"/v1/campaigns/"+campaignID+"/skus/"+skuID+"/reservations",
		map[string]string{"request_id": requestID, "user_id": userID}, nil)
}

func (ts *testServer) reserve(campaignID, skuID, requestID, userID string) response {
	ts.t.Helper()
	r, err := tryReserve(ts.base, campaignID, skuID, requestID, userID)
	if err != nil {
		ts.t.Fatal(err)
	}
	return r
}

// reserveAll runs n reserves at once; req(i) gives request and user ids.
// Transport errors fail the test after all have returned.
func (ts *testServer) reserveAll(campaignID, skuID string, n int, req func(i int) (requestID, userID string)) []response {
	ts.t.Helper()
	out := make([]response, n)
	errs := make([]error, n)
	parallel(n, func(i int) {
		rid, uid := req(i)
		out[i], errs[i] = tryReserve(ts.base, campaignID, skuID, rid, uid)
	})
	for _, err := range errs {
		if err != nil {
			ts.t.Fatal(err)
		}
	}
	return out
}

// campaign is a campaign body open from a second ago for an hour.
func campaign(id string, window string, skus map[string]int) map[string]any {
	now := time.Now().UTC()
	list := []map[string]any{}
	for s, n := range skus {
		list = append(list, map[string]any{"sku_id": s, "sale_limit": n})
	}
	return map[string]any{
		"campaign_id":    id,
		"start_at":       now.Add(-time.Second).Format(time.RFC3339Nano),
		"end_at":         now.Add(time.Hour).Format(time.RFC3339Nano),
		"payment_window": window,
		"skus":           list,
	}
}

// define puts a campaign and fails the test unless it is accepted.
func (ts *testServer) define(body map[string]any) {
	ts.t.Helper()
	r := ts.admin(http.MethodPut, "/admin/campaigns/"+body["campaign_id"].(string), body)
	if r.status != http.StatusOK && r.status != http.StatusCreated {
		ts.t.Fatalf("define: %v", r)
	}
}

// audit returns the admin audit of a SKU and checks its invariants.
func (ts *testServer) audit(campaignID, skuID string) response {
	ts.t.Helper()
	r := ts.admin(http.MethodGet, "/admin/campaigns/"+campaignID+"/skus/"+skuID+"/audit", nil)
	if r.status != http.StatusOK || r.body["invariant_ok"] != true {
		ts.t.Fatalf("audit: %v", r)
	}
	return r
}

func num(r response, key string) int {
	f, _ := r.body[key].(float64)
	return int(f)
}

// want fails the test unless r has the status and, if reason is not
// empty, that "error" reason.
func want(t testing.TB, r response, status int, reason string) {
	t.Helper()
	if r.status != status || (reason != "" && r.str("error") != reason) {
		t.Fatalf("got %v, want %d %s", r, status, reason)
	}
}

// parallel runs f(i) for i in [0, n) at once, after a common start.
func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			f(i)
		}()
	}
	close(start)
	wg.Wait()
}

// eventually polls cond every 50ms until it holds or d passes: d bounds a
// condition that never holds, and must leave a loaded machine its time
// (a minute or more, unless the condition's time is what is tested).
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stepClock is a clock a test steps by hand (start: the wall clock's now,
// so that campaign() windows are open).
type stepClock struct{ ms atomic.Int64 }

func newStepClock() *stepClock {
	c := &stepClock{}
	c.ms.Store(time.Now().UnixMilli())
	return c
}

func (c *stepClock) now() time.Time { return time.UnixMilli(c.ms.Load()) }

func (c *stepClock) step(d time.Duration) { c.ms.Add(d.Milliseconds()) }
