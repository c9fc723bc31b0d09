package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/wal"
	"github.com/valyala/fasthttp"
)

// The single-request path, one request at a time (-cpu 1 gives stable
// instruction counts under valgrind --tool=callgrind): a hot reserve (the
// engine round trip with fsync off) and a fast-path SOLD_OUT (answered by
// the ingress from the SKU's published stats, no engine call).

// pathServer is a server on the real engine (fsync off) with one SKU of
// saleLimit units, and its handler.
func pathServer(b *testing.B, saleLimit int) fasthttp.RequestHandler {
	b.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := prometheus.NewRegistry()
	// ManualTick: no timer-driven work beside the requests (instruction
	// counts then depend on the requests alone, not on how slowly
	// valgrind runs them).
	eng, err := actors.Open(actors.Config{DataDir: b.TempDir(), Fsync: wal.FsyncNeverBenchmarkOnly, Logger: log, Registerer: reg,
		ManualTick: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { eng.Close() })
	srv, err := httpapi.New(httpapi.Config{Engine: eng, AdminToken: testToken, Logger: log, Registry: reg})
	if err != nil {
		b.Fatal(err)
	}
	handler := srv.Handler()
	body, _ := json.Marshal(campaign("bench", "15m", map[string]int{"s": saleLimit}))
	var define fasthttp.RequestCtx
	define.Request.Header.SetMethod(fasthttp.MethodPut)
	define.Request.SetRequestURI("/admin/campaigns/bench")
	define.Request.Header.Set("Authorization", "Bearer "+testToken)
	define.Request.SetBody(body)
	handler(&define)
	if define.Response.StatusCode() != fasthttp.StatusCreated { // a new campaign (RFC 9110 §9.3.4)
		b.Fatalf("define: %d %s", define.Response.StatusCode(), define.Response.Body())
	}
	for _, ok := eng.SKUStats("bench", "s"); !ok; _, ok = eng.SKUStats("bench", "s") {
		time.Sleep(time.Millisecond) // the definition's durable view is published
	}
	return handler
}

// reserveOnce posts reserve n and checks the status.
func reserveOnce(b *testing.B, handler fasthttp.RequestHandler, ctx *fasthttp.RequestCtx, buf []byte, n int, status int) []byte {
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
	handler := pathServer(b, 1_000_000_000)
	var ctx fasthttp.RequestCtx
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	b.ResetTimer()
	for n := range b.N {
		buf = reserveOnce(b, handler, &ctx, buf, n, fasthttp.StatusAccepted)
	}
}

// BenchmarkPathSoldOut is one fast-path SOLD_OUT after another: new
// request_ids for a SKU whose durable available is 0.
func BenchmarkPathSoldOut(b *testing.B) {
	handler := pathServer(b, 1)
	var ctx fasthttp.RequestCtx
	buf := make([]byte, 0, 64)
	buf = reserveOnce(b, handler, &ctx, buf, -1, fasthttp.StatusAccepted)
	b.ReportAllocs()
	b.ResetTimer()
	for n := range b.N {
		buf = reserveOnce(b, handler, &ctx, buf, n, fasthttp.StatusConflict)
	}
}
