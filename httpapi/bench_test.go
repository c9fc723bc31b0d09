package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/wal"
	"github.com/valyala/fasthttp"
)

// BenchmarkReserveHandler is the server's CPU per reserve without the
// network: the handler (routing, parsing, dedup, admission, the engine
// round trip, the reply) called in process by 64 goroutines, as by 64
// connections. Its allocs/op is exact; ns/op counts the fsync-free engine.
func BenchmarkReserveHandler(b *testing.B) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := prometheus.NewRegistry()
	eng, err := actors.Open(actors.Config{DataDir: b.TempDir(), Fsync: wal.FsyncNeverBenchmarkOnly, Logger: log, Registerer: reg})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	srv, err := httpapi.New(httpapi.Config{Engine: eng, AdminToken: testToken, Logger: log, Registry: reg})
	if err != nil {
		b.Fatal(err)
	}
	handler := srv.Handler()
	body, _ := json.Marshal(campaign("bench", "15m", map[string]int{"s": 1_000_000_000}))
	var define fasthttp.RequestCtx
	define.Request.Header.SetMethod(fasthttp.MethodPut)
	define.Request.SetRequestURI("/admin/campaigns/bench")
	define.Request.Header.Set("Authorization", "Bearer "+testToken)
	define.Request.SetBody(body)
	handler(&define)
	if define.Response.StatusCode() != fasthttp.StatusCreated {
		b.Fatalf("define: %d %s", define.Response.StatusCode(), define.Response.Body())
	}
	time.Sleep(10 * time.Millisecond) // the definition's durable view is published

	var seq atomic.Int64
	b.SetParallelism(32) // x GOMAXPROCS goroutines
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var ctx fasthttp.RequestCtx
		buf := make([]byte, 0, 64)
		for pb.Next() {
			n := seq.Add(1)
			ctx.Request.Reset()
			ctx.Response.Reset()
			ctx.Request.Header.SetMethod(fasthttp.MethodPost)
			ctx.Request.SetRequestURI("/v1/campaigns/bench/skus/s/reservations")
			buf = fmt.Appendf(buf[:0], `{"request_id":"r%d","user_id":"u%d"}`, n, n)
			ctx.Request.SetBody(buf)
			handler(&ctx)
			if ctx.Response.StatusCode() != fasthttp.StatusAccepted {
				b.Errorf("reserve: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
				return
			}
		}
	})
}
