package httpapi_test

import (
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/entrypass"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/internal/benchsize"
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
	defineInProcess(b, handler, eng, campaign("bench", "15m", map[string]int{"s": 1_000_000_000}))

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

// benchPass mints the pass of reserve n of a benchmark on campaign
// "bench", SKU "s": for user n, with a device key and a nonce of its own,
// valid for the hour from now.
func benchPass(b *testing.B, ring *entrypass.KeyRing, n int, now time.Time) string {
	cl := entrypass.Claims{CampaignID: "bench", SKUID: "s", UserID: fmt.Sprintf("u%d", n),
		NotBeforeMs: now.Add(-time.Second).UnixMilli(), ExpiresAtMs: now.Add(time.Hour).UnixMilli()}
	var key entrypass.SubjectKey
	binary.BigEndian.PutUint64(key[:], uint64(n))
	cl.Subjects.Set(entrypass.SubjectDevice, key)
	var nonce entrypass.Nonce
	binary.BigEndian.PutUint64(nonce[:], uint64(n))
	text, err := entrypass.Encode(ring.Signer(), cl, nonce)
	if err != nil {
		b.Fatal(err)
	}
	return text
}

// BenchmarkReserveEntryPass compares, in one run, the throughput of
// reserves with an entry pass (verified, its subject key counted against
// max_unpaid_per_subject and recorded) and without: the same handler and
// engine, in alternating rounds of passRound reserves each, sent by 64
// goroutines, so that the machine's load weighs on both kinds alike. It
// reports each kind's wall time per reserve (ns/reserve-plain,
// ns/reserve-pass) and the pass's overhead in percent (its budget is at
// most 10%): the median over pairs of adjacent rounds of their time
// ratio, which a burst of load on a shared machine moves less than the
// totals. The passes are minted before the timer starts: minting is the
// gateway's cost.
func BenchmarkReserveEntryPass(b *testing.B) {
	b.Run("fsync=always", func(b *testing.B) { benchmarkReserveEntryPass(b, wal.FsyncAlways) })
	b.Run("fsync=never", func(b *testing.B) { benchmarkReserveEntryPass(b, wal.FsyncNeverBenchmarkOnly) })
}

// benchmarkReserveEntryPass is BenchmarkReserveEntryPass with one fsync
// mode: always is the server as it runs (the "reserve throughput"),
// never its CPU alone, where the pass's fixed cost (about 1 µs: the MAC,
// the longer body, the subject count) weighs most.
func benchmarkReserveEntryPass(b *testing.B, fsync wal.FsyncMode) {
	passRound := benchsize.Pick(512, 16)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := prometheus.NewRegistry()
	eng, err := actors.Open(actors.Config{DataDir: b.TempDir(), Fsync: fsync, Logger: log, Registerer: reg})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	cfg := httpapi.Config{Engine: eng, AdminToken: testToken, Logger: log, Registry: reg}
	passConfig(b)(&cfg)
	srv, err := httpapi.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	handler := srv.Handler()
	c := campaign("bench", "15m", map[string]int{"s": 1_000_000_000})
	c["max_unpaid_per_subject"] = 1
	defineInProcess(b, handler, eng, c)

	// Reserve n of the run: even rounds plain, odd rounds with a pass for
	// user n and a device of its own.
	rounds := (b.N + passRound - 1) / passRound
	if benchsize.Tiny() {
		rounds = max(rounds, 2) // a plain round and a pass round
	}
	ring, _ := entrypass.ParseKeyRing(testPassKeys)
	passes := make([]string, rounds*passRound)
	now := time.Now()
	for n := range passes {
		if (n/passRound)%2 == 0 {
			continue
		}
		passes[n] = benchPass(b, ring, n, now)
	}

	var spent [2]time.Duration // plain, pass
	var done [2]int
	var ratios []float64 // pass round time / the plain round's before it
	var failed atomic.Bool
	b.ReportAllocs()
	b.ResetTimer()
	var last time.Duration
	for round := 0; round < rounds && !failed.Load(); round++ {
		kind := round % 2
		var next atomic.Int64
		next.Store(int64(round * passRound))
		end := int64((round + 1) * passRound)
		start := time.Now()
		parallel(64, func(int) {
			var ctx fasthttp.RequestCtx
			buf := make([]byte, 0, 512)
			for n := next.Add(1) - 1; n < end; n = next.Add(1) - 1 {
				ctx.Request.Reset()
				ctx.Response.Reset()
				ctx.Request.Header.SetMethod(fasthttp.MethodPost)
				ctx.Request.SetRequestURI("/v1/campaigns/bench/skus/s/reservations")
				if kind == 0 {
					buf = fmt.Appendf(buf[:0], `{"request_id":"r%d","user_id":"u%d"}`, n, n)
				} else {
					buf = fmt.Appendf(buf[:0], `{"user_id":"u%d","entry_pass":"%s"}`, n, passes[n])
				}
				ctx.Request.SetBody(buf)
				handler(&ctx)
				if ctx.Response.StatusCode() != fasthttp.StatusAccepted && !failed.Swap(true) {
					b.Errorf("reserve: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
				}
			}
		})
		took := time.Since(start)
		if kind == 1 {
			ratios = append(ratios, float64(took)/float64(last))
		}
		last = took
		spent[kind] += took
		done[kind] += passRound
	}
	b.StopTimer()
	if done[0] == 0 || done[1] == 0 {
		return // one round: nothing to compare
	}
	plain := float64(spent[0].Nanoseconds()) / float64(done[0])
	pass := float64(spent[1].Nanoseconds()) / float64(done[1])
	b.ReportMetric(plain, "ns/reserve-plain")
	b.ReportMetric(pass, "ns/reserve-pass")
	slices.Sort(ratios)
	b.ReportMetric(100*(ratios[len(ratios)/2]-1), "pass-overhead-%")
}
