package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/wal"
	"github.com/valyala/fasthttp"
)

// benchServer is an engine and its HTTP service on a loopback port.
type benchServer struct {
	base string
	eng  *actors.Engine
	srv  *httpapi.Server
	stop func()
	root string
}

// history returns the root history of a campaign's SKU s (its cursors'
// prefix), read once from the feed.
func (s *benchServer) history(b *testing.B, c string) string {
	if s.root == "" {
		r, err := try(http.MethodGet, s.base+feedPath(c, "s", "?limit=1"), nil, map[string]string{"Authorization": "Bearer " + testToken})
		if err != nil {
			b.Fatal(err)
		}
		s.root, _, _ = strings.Cut(r.str("next_cursor"), "-")
	}
	return s.root
}

func startBenchServer(b *testing.B, fsync wal.FsyncMode) *benchServer {
	b.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := prometheus.NewRegistry()
	eng, err := actors.Open(actors.Config{DataDir: b.TempDir(), Fsync: fsync, Logger: log, Registerer: reg, SnapshotEvery: -1})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := httpapi.New(httpapi.Config{Engine: eng, AdminToken: testToken, Logger: log, Registry: reg, MaxQueueWait: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ln)
	return &benchServer{base: "http://" + ln.Addr().String(), eng: eng, srv: srv, stop: func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		eng.Close()
	}}
}

var benchClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}

// benchDefine defines campaign c with one SKU s of a large sale limit.
func (s *benchServer) define(b *testing.B, c string) {
	b.Helper()
	r, err := try(http.MethodPut, s.base+"/admin/campaigns/"+c, campaign(c, "15m", map[string]int{"s": 100_000_000}),
		map[string]string{"Authorization": "Bearer " + testToken})
	if err != nil || r.status != http.StatusCreated {
		b.Fatalf("define: %v %v", r, err)
	}
}

// readFeed reads the SKU's feed from cursor until it has seen through
// index last (long polls of wait) or ctx ends, and returns the events
// read. It reads only what a consumer needs to go on (the count, the
// last index and next_cursor, found in the raw page): the benchmark
// measures the server's share, and the consumer shares its 2 cores.
func readFeed(ctx context.Context, base, c, cursor string, last uint64, wait string) (int, error) {
	read := 0
	var buf bytes.Buffer
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+feedPath(c, "s", "?limit=1000&wait="+wait+"&after="+cursor), nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := benchClient.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return read, nil
			}
			return read, err
		}
		buf.Reset()
		_, err = buf.ReadFrom(resp.Body)
		resp.Body.Close()
		if err != nil {
			return read, err
		}
		page := buf.Bytes()
		n := bytes.Count(page, []byte(`"specversion"`))
		read += n
		tail := page[bytes.LastIndex(page, []byte(`"next_cursor":"`))+len(`"next_cursor":"`):]
		cursor = string(tail[:bytes.IndexByte(tail, '"')])
		if n > 0 {
			_, idx, _ := strings.Cut(cursor, "-")
			if i, _ := strconv.ParseUint(idx, 10, 64); i >= last {
				return read, nil
			}
		}
	}
	return read, nil
}

// reserveLoad sends n reserves from 64 goroutines over loopback HTTP.
func reserveLoad(b *testing.B, base, c string, n int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				r, err := tryReserve(base, c, "s", fmt.Sprint("r", i), fmt.Sprint("u", i))
				if err != nil || r.status != http.StatusAccepted {
					b.Errorf("reserve %d: %v %v", i, r, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkFeedRead: one consumer reads a 1,000,000-record SKU log through
// the HTTP feed in pages of 1,000 (CloudEvents JSON, decoded by the
// client): records/s.
func BenchmarkFeedRead(b *testing.B) {
	const records = 1_000_000
	s := startBenchServer(b, wal.FsyncNeverBenchmarkOnly)
	defer s.stop()
	s.fill(b, "fr", records-1, 256)
	log, _, _ := s.eng.FeedLog("fr", "s")
	last := log.DurableIndex()
	b.ResetTimer()
	start := time.Now()
	read := 0
	for b.Loop() {
		n, err := readFeed(context.Background(), s.base, "fr", "", last, "0s")
		if err != nil {
			b.Fatal(err)
		}
		read += n
	}
	b.ReportMetric(float64(read)/time.Since(start).Seconds(), "records/s")
}

// BenchmarkReserveWithConsumers: reserve throughput over loopback HTTP
// (64 clients, fsync on) while 0, 1 or 4 consumers tail the SKU's feed
// with long polls in the same process; each consumer must have read every
// record at the end.
func BenchmarkReserveWithConsumers(b *testing.B) {
	for _, consumers := range []int{0, 1, 4} {
		b.Run(fmt.Sprintf("consumers=%d", consumers), func(b *testing.B) {
			s := startBenchServer(b, wal.FsyncAlways)
			defer s.stop()
			c := fmt.Sprintf("rc%d", consumers)
			s.define(b, c)
			ctx, stop := context.WithCancel(context.Background())
			results := make(chan int, consumers)
			for i := 0; i < consumers; i++ {
				go func() {
					n, _ := readFeed(ctx, s.base, c, "", 1<<62, "30s")
					results <- n
				}()
			}
			b.ResetTimer()
			start, cpuStart := time.Now(), cpuTime()
			reserveLoad(b, s.base, c, b.N)
			elapsed, cpu := time.Since(start), cpuTime()-cpuStart
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "reserves/s")
			// The process's CPU per reserve: server, load and consumers
			// alike (all in this process); less disturbed by other load
			// on the machine than reserves/s.
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/reserve")
			log, _, _ := s.eng.FeedLog(c, "s")
			last := log.DurableIndex()
			stop()
			for i := 0; i < consumers; i++ {
				<-results
			}
			// Each consumer caught up: a last read from the start sees them all.
			if consumers > 0 {
				if n, err := readFeed(context.Background(), s.base, c, "", last, "1s"); err != nil || n != int(last) {
					b.Fatalf("feed holds %d of %d records: %v", n, last, err)
				}
			}
		})
	}
}

// cpuTime is the process's CPU time so far (user + system): a measure
// that a loaded machine disturbs far less than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFeedPageHandler: the server's CPU per event of a feed page
// (read from the log, decoded, mapped to CloudEvents, encoded), the
// handler called in process on pages of 1,000 reservation events, as the
// first consumer to read them (first=cpu-ns/event) and as a second one
// (cached=cpu-ns/event: the SKU's encoded events are shared).
func BenchmarkFeedPageHandler(b *testing.B) {
	const records = 100_000
	s := startBenchServer(b, wal.FsyncNeverBenchmarkOnly)
	defer s.stop()
	s.fill(b, "ph", records-1, 64)
	handler := s.srv.Handler()
	var ctx fasthttp.RequestCtx
	page := func(from int) int {
		after := ""
		if from > 0 {
			after = fmt.Sprintf("&after=%s-%d", s.history(b, "ph"), from)
		}
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.SetRequestURI(feedPath("ph", "s", "?limit=1000"+after))
		ctx.Request.Header.Set("Authorization", "Bearer "+testToken)
		handler(&ctx)
		if ctx.Response.StatusCode() != http.StatusOK {
			b.Fatalf("%d %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
		return bytes.Count(ctx.Response.Body(), []byte(`"specversion"`))
	}
	var first, cached time.Duration
	events := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		from := (i * 1000) % (records - 1000)
		start := cpuTime()
		events += page(from)
		mid := cpuTime()
		page(from)
		first, cached = first+mid-start, cached+cpuTime()-mid
	}
	b.ReportMetric(float64(first.Nanoseconds())/float64(events), "first-cpu-ns/event")
	b.ReportMetric(float64(cached.Nanoseconds())/float64(events), "cached-cpu-ns/event")
}

// fill defines campaign c and makes reservations 1..n of its SKU s from
// callers goroutines (in process: the engine, not HTTP).
func (s *benchServer) fill(b *testing.B, c string, n, callers int) {
	b.Helper()
	s.define(b, c)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < callers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				if _, err := s.eng.Reserve(context.Background(), c, "s", fmt.Sprint("r", i), fmt.Sprint("u", i)); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
