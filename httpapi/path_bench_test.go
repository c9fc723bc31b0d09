package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/entrypass"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/internal/benchsize"
	"github.com/seckill/seckill/wal"
	"github.com/valyala/fasthttp"
)

// The single-request path, one request at a time (-cpu 1 gives stable
// instruction counts under valgrind --tool=callgrind): a hot reserve (the
// engine round trip with fsync off) and a fast-path SOLD_OUT (answered by
// the ingress from the SKU's published stats, no engine call).

// callgrindLoopStart and callgrindLoopEnd mark a benchmark's timed loop
// for valgrind --tool=callgrind: --zero-before=*callgrindLoopStart
// --dump-before=*callgrindLoopEnd counts the loop alone (the requests and
// whatever the engine's goroutines do meanwhile), without the set-up,
// whose goroutines and sleeps vary its count by millions of
// instructions from run to run.
//
//go:noinline
func callgrindLoopStart() {}

//go:noinline
func callgrindLoopEnd() {}

// timedLoop runs the timed loop of a path benchmark between the callgrind
// markers and reports the process's CPU time per request (cpu-ns/op: user
// and system, every goroutine, the set-up left out), which a loaded
// machine moves less than the wall time of ns/op. The loop starts right
// after a garbage collection, so whether and when one runs within it does
// not depend on how much the set-up happened to allocate.
func timedLoop(b *testing.B, request func(n int)) {
	b.ReportAllocs()
	runtime.GC()
	b.ResetTimer()
	cpu := processCPU()
	callgrindLoopStart()
	for n := range b.N {
		request(n)
	}
	callgrindLoopEnd()
	if cpu != 0 {
		b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
	}
}

// pathServer is a server on the real engine (fsync off) with one SKU of
// saleLimit units, and its handler. With passes, the server verifies
// entry passes (the test ring) and the campaign caps unpaid reservations
// at one per subject key.
func pathServer(b testing.TB, saleLimit int, passes bool) fasthttp.RequestHandler {
	b.Helper()
	return pathServerFsync(b, saleLimit, passes, wal.FsyncNeverBenchmarkOnly).Handler()
}

// pathServerFsync is pathServer's server, with the log's fsync mode. Its
// stats sampler is off (StatsInterval -1): Serve starts no timer-driven
// work either.
func pathServerFsync(b testing.TB, saleLimit int, passes bool, fsync wal.FsyncMode) *httpapi.Server {
	b.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := prometheus.NewRegistry()
	// ManualTick: no timer-driven work beside the requests (instruction
	// counts then depend on the requests alone, not on how slowly
	// valgrind runs them).
	eng, err := actors.Open(actors.Config{DataDir: b.TempDir(), Fsync: fsync, Logger: log, Registerer: reg,
		ManualTick: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { eng.Close() })
	cfg := httpapi.Config{Engine: eng, Feed: feed.New(eng), Lotteries: eng, AdminToken: testToken, Logger: log, Registry: reg,
		StatsInterval: -1}
	c := campaign("bench", "15m", map[string]int{"s": saleLimit})
	if passes {
		passConfig(b)(&cfg)
		c["max_unpaid_per_subject"] = 1
	}
	srv, err := httpapi.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defineInProcess(b, srv.Handler(), eng, c)
	return srv
}

// defineInProcess PUTs campaign c (one SKU, s) through handler, a server's
// on eng, and waits until the definition's durable view is published (the
// ingress answers from it).
func defineInProcess(b testing.TB, handler fasthttp.RequestHandler, eng *actors.Engine, c map[string]any) {
	b.Helper()
	body, _ := json.Marshal(c)
	var define fasthttp.RequestCtx
	define.Request.Header.SetMethod(fasthttp.MethodPut)
	define.Request.SetRequestURI("/admin/campaigns/" + c["campaign_id"].(string))
	define.Request.Header.Set("Authorization", "Bearer "+testToken)
	define.Request.SetBody(body)
	handler(&define)
	if define.Response.StatusCode() != fasthttp.StatusCreated { // a new campaign (RFC 9110 §9.3.4)
		b.Fatalf("define: %d %s", define.Response.StatusCode(), define.Response.Body())
	}
	for _, ok := eng.SKUStats(c["campaign_id"].(string), "s"); !ok; _, ok = eng.SKUStats(c["campaign_id"].(string), "s") {
		time.Sleep(time.Millisecond)
	}
}

// reserveOnce posts reserve n and checks the status.
func reserveOnce(b testing.TB, handler fasthttp.RequestHandler, ctx *fasthttp.RequestCtx, buf []byte, n int, status int) []byte {
	ctx.Request.Reset()
	ctx.Response.Reset()
	ctx.Request.Header.SetMethod(fasthttp.MethodPost)
	ctx.Request.SetRequestURI("/v1/campaigns/bench/skus/s/reservations")
	buf = fmt.Appendf(buf[:0], `{"request_id":"r%d","user_id":"u%d"}`, n, n)
	ctx.Request.SetBody(buf)
	handler(ctx)
	if ctx.Response.StatusCode() != status {
		b.Fatalf("reserve %d: %d %s, want %d", n, ctx.Response.StatusCode(), ctx.Response.Body(), status)
	}
	return buf
}

// BenchmarkPathHotReserve is one accepted reserve after another, through
// the whole handler and the engine (fsync off).
func BenchmarkPathHotReserve(b *testing.B) {
	handler := pathServer(b, 1_000_000_000, false)
	var ctx fasthttp.RequestCtx
	buf := make([]byte, 0, 64)
	timedLoop(b, func(n int) { buf = reserveOnce(b, handler, &ctx, buf, n, fasthttp.StatusAccepted) })
}

// BenchmarkPathSoldOut is one fast-path SOLD_OUT after another: new
// request_ids for a SKU whose durable available is 0.
func BenchmarkPathSoldOut(b *testing.B) {
	handler := pathServer(b, 1, false)
	var ctx fasthttp.RequestCtx
	buf := make([]byte, 0, 64)
	buf = reserveOnce(b, handler, &ctx, buf, -1, fasthttp.StatusAccepted)
	timedLoop(b, func(n int) { buf = reserveOnce(b, handler, &ctx, buf, n, fasthttp.StatusConflict) })
}

// BenchmarkPathReservePass is one accepted reserve with an entry pass
// after another: the pass verified, its device key counted against a cap
// of one and recorded. The passes (one per user, each with a device of its
// own) are minted before the timer starts, at least passPoolMin of them
// whatever b.N, outside the loop that callgrindLoopStart marks.
func BenchmarkPathReservePass(b *testing.B) {
	handler := pathServer(b, 1_000_000_000, true)
	ring, err := entrypass.ParseKeyRing(testPassKeys)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	passPoolMin := benchsize.Pick(11_001, 1) // the callgrind runs' b.N, and the 1 of the first round
	bodies := make([][]byte, max(b.N, passPoolMin))
	for n := range bodies {
		bodies[n] = fmt.Appendf(nil, `{"user_id":"u%d","entry_pass":"%s"}`, n, benchPass(b, ring, n, now))
	}
	var ctx fasthttp.RequestCtx
	timedLoop(b, func(n int) {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.Header.SetMethod(fasthttp.MethodPost)
		ctx.Request.SetRequestURI("/v1/campaigns/bench/skus/s/reservations")
		ctx.Request.SetBody(bodies[n])
		handler(&ctx)
		if ctx.Response.StatusCode() != fasthttp.StatusAccepted {
			b.Fatalf("reserve %d: %d %s", n, ctx.Response.StatusCode(), ctx.Response.Body())
		}
	})
}
