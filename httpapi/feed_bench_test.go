package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/internal/benchsize"
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
	return startBenchServerWith(b, fsync, nil)
}

// startBenchServerWith is startBenchServer with config, if not nil, tuning
// the server's Config.
func startBenchServerWith(b *testing.B, fsync wal.FsyncMode, config func(*httpapi.Config)) *benchServer {
	b.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := prometheus.NewRegistry()
	eng, err := actors.Open(actors.Config{DataDir: b.TempDir(), Fsync: fsync, Logger: log, Registerer: reg, SnapshotEvery: -1})
	if err != nil {
		b.Fatal(err)
	}
	cfg := httpapi.Config{Engine: eng, Feed: feed.New(eng), AdminToken: testToken, Logger: log, Registry: reg, MaxQueueWait: 10 * time.Second}
	if config != nil {
		config(&cfg)
	}
	srv, err := httpapi.New(cfg)
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

// feedConsumer is a cheap feed client for the benchmarks: one fasthttp
// connection, its request and response reused, no JSON decoding. It still
// reads every event (it counts them and takes next_cursor and the last
// index from the page), so the benchmark measures the server's share of a
// consumer and as little of the client's as a real one can cost.
type feedConsumer struct {
	client   *fasthttp.HostClient
	path     string // the feed path up to after=
	cursor   string
	events   int           // events read
	pages    int           // pages with events
	progress atomic.Uint64 // the index of the last record read
}

func newFeedConsumer(base, c, wait string) *feedConsumer {
	return &feedConsumer{
		client: &fasthttp.HostClient{Addr: strings.TrimPrefix(base, "http://"), MaxConns: 1, ReadTimeout: time.Minute},
		path:   feedPath(c, "s", "?limit=1000&wait="+wait+"&after="),
	}
}

// next reads one page: the events it held.
func (fc *feedConsumer) next(req *fasthttp.Request, resp *fasthttp.Response) (int, error) {
	req.SetRequestURI("http://" + fc.client.Addr + fc.path + fc.cursor)
	req.Header.Set("Authorization", "Bearer "+testToken)
	if err := fc.client.Do(req, resp); err != nil {
		return 0, err
	}
	if resp.StatusCode() != http.StatusOK {
		return 0, fmt.Errorf("feed: %d %s", resp.StatusCode(), resp.Body())
	}
	page := resp.Body()
	n := bytes.Count(page, []byte(`"specversion"`))
	at := bytes.LastIndex(page, []byte(`"next_cursor":"`))
	if at < 0 {
		return 0, fmt.Errorf("feed: no next_cursor in %.200s", page)
	}
	tail := page[at+len(`"next_cursor":"`):]
	cursor := tail[:bytes.IndexByte(tail, '"')]
	if n > 0 {
		fc.events += n
		fc.pages++
		_, idx, _ := bytes.Cut(cursor, []byte("-"))
		i, err := strconv.ParseUint(string(idx), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("feed: next_cursor %q", cursor)
		}
		fc.cursor = string(cursor)
		fc.progress.Store(i)
	}
	return n, nil
}

// readThrough reads pages until it has read the record at last, or done
// is closed (then it returns after the page in flight).
func (fc *feedConsumer) readThrough(last uint64, done <-chan struct{}) error {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	for fc.progress.Load() < last {
		select {
		case <-done:
			return nil
		default:
		}
		if _, err := fc.next(req, resp); err != nil {
			select {
			case <-done:
				return nil // the server shut down under a long poll
			default:
				return err
			}
		}
	}
	return nil
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
// the HTTP feed in pages of 1,000 (CloudEvents JSON; the client counts the
// events and takes next_cursor): records/s.
func BenchmarkFeedRead(b *testing.B) {
	records := benchsize.Pick(1_000_000, 1_000)
	s := startBenchServer(b, wal.FsyncNeverBenchmarkOnly)
	defer s.stop()
	s.fill(b, "fr", records-1, 256)
	log, _, _ := s.eng.FeedLog("fr", "s")
	last := log.DurableIndex()
	b.ResetTimer()
	start := time.Now()
	read := 0
	for b.Loop() {
		fc := newFeedConsumer(s.base, "fr", "0s")
		if err := fc.readThrough(last, nil); err != nil {
			b.Fatal(err)
		}
		read += fc.events
	}
	b.ReportMetric(float64(read)/time.Since(start).Seconds(), "records/s")
}

// consumerTrial is one run of BenchmarkReserveWithConsumers.
type consumerTrial struct {
	consumers     int
	reservesPerS  float64
	cpuPerReserve time.Duration // the process's CPU from the load's start until every consumer caught up
	eventsPerPage float64       // per consumer
	// recordsPerBatch is the log's mean group commit: consumers that take
	// CPU at each commit can shrink it, and then reserves cost more.
	recordsPerBatch float64
	lag             uint64 // records the slowest consumer had still to read when the load ended
}

// BenchmarkReserveWithConsumers: reserve throughput over loopback HTTP
// (64 clients, fsync on, b.N reserves a trial) while 0, 1 or 4 consumers
// tail the SKU's feed with 30 s long polls from the same process (cheap
// clients: feedConsumer). The three are interleaved in rounds (0,1,4 then
// 1,4,0 then 4,0,1, ...: SECKILL_FEED_BENCH_ROUNDS, default 3) so that the
// machine's other load touches each alike, each trial on a fresh server;
// the figures are the medians of the rounds, and drop-%-N compares the
// medians. Each consumer must read every record.
func BenchmarkReserveWithConsumers(b *testing.B) {
	rounds := benchsize.Pick(3, 1)
	if v, err := strconv.Atoi(os.Getenv("SECKILL_FEED_BENCH_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	arms := []int{0, 1, 4}
	if v := os.Getenv("SECKILL_FEED_BENCH_ARMS"); v != "" { // e.g. "4", to profile one
		arms = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				b.Fatal(err)
			}
			arms = append(arms, n)
		}
	}
	if b.N == 1 && !benchsize.Tiny() {
		return // the framework's first probe: -benchtime Nx is expected
	}
	trials := map[int][]consumerTrial{}
	reserveWithConsumers(b, 0, max(b.N/4, 100)) // warm-up, not counted
	for round := 0; round < rounds; round++ {
		for i := range arms {
			n := arms[(round+i)%len(arms)]
			t := reserveWithConsumers(b, n, b.N)
			b.Logf("round %d consumers=%d: %.0f reserves/s, %.1f cpu-µs/reserve, %.1f records/group commit, %.1f events/page, lag %d",
				round, n, t.reservesPerS, float64(t.cpuPerReserve.Nanoseconds())/1e3, t.recordsPerBatch, t.eventsPerPage, t.lag)
			trials[n] = append(trials[n], t)
		}
	}
	b.StopTimer()
	median := func(n int, f func(consumerTrial) float64) float64 {
		v := make([]float64, 0, len(trials[n]))
		for _, t := range trials[n] {
			v = append(v, f(t))
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	rate := func(t consumerTrial) float64 { return t.reservesPerS }
	cpu := func(t consumerTrial) float64 { return float64(t.cpuPerReserve.Nanoseconds()) / 1e3 }
	base := 0.0
	if len(trials[0]) > 0 {
		base = median(0, rate)
	}
	for _, n := range arms {
		b.ReportMetric(median(n, rate), fmt.Sprintf("reserves/s-%d", n))
		b.ReportMetric(median(n, cpu), fmt.Sprintf("cpu-µs/reserve-%d", n))
		if n > 0 && base > 0 {
			b.ReportMetric(100*(1-median(n, rate)/base), fmt.Sprintf("drop-%%-%d", n))
			b.ReportMetric(median(n, func(t consumerTrial) float64 { return t.eventsPerPage }), fmt.Sprintf("events/page-%d", n))
		}
		b.ReportMetric(median(n, func(t consumerTrial) float64 { return t.recordsPerBatch }), fmt.Sprintf("records/commit-%d", n))
	}
	b.ReportMetric(0, "ns/op")
}

// reserveWithConsumers runs one trial: a fresh server, consumers long
// polling its SKU from the start, n reserves.
func reserveWithConsumers(b *testing.B, consumers, n int) consumerTrial {
	s := startBenchServer(b, wal.FsyncAlways)
	stopped := false
	defer func() {
		if !stopped {
			s.stop()
		}
	}()
	s.define(b, "rc")
	done := make(chan struct{})
	fcs := make([]*feedConsumer, consumers)
	errs := make(chan error, consumers)
	for i := range fcs {
		fcs[i] = newFeedConsumer(s.base, "rc", "30s")
		go func() { errs <- fcs[i].readThrough(math.MaxUint64, done) }()
	}
	// Every consumer has read the definition and waits in a long poll.
	for _, fc := range fcs {
		for fc.progress.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	start, cpuStart := time.Now(), cpuTime()
	reserveLoad(b, s.base, "rc", n)
	elapsed := time.Since(start)
	fl, _, _ := s.eng.FeedLog("rc", "s")
	log := fl.(*wal.Log) // its group commits' figures
	last := log.DurableIndex()
	t := consumerTrial{consumers: consumers, reservesPerS: float64(n) / elapsed.Seconds()}
	if st := log.Stats(); st.Batches > 0 {
		t.recordsPerBatch = float64(st.Records) / float64(st.Batches)
	}
	for _, fc := range fcs {
		t.lag = max(t.lag, last-min(last, fc.progress.Load()))
	}
	deadline := time.Now().Add(time.Minute)
	for _, fc := range fcs {
		for fc.progress.Load() < last && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	t.cpuPerReserve = (cpuTime() - cpuStart) / time.Duration(n)
	close(done)
	s.stop() // ends the long polls
	stopped = true
	events, pages := 0, 0
	for _, fc := range fcs {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
		if fc.events != int(last) { // the definition and every reservation
			b.Fatalf("a consumer read %d events of %d records", fc.events, last)
		}
		events, pages = events+fc.events, pages+fc.pages
	}
	if pages > 0 {
		t.eventsPerPage = float64(events) / float64(pages)
	}
	return t
}

// cpuTime is the process's CPU time so far (user + system): a measure
// that a loaded machine disturbs far less than wall time.
func cpuTime() time.Duration { return time.Duration(processCPU()) }

// BenchmarkFeedPageHandler: the server's CPU per event of a feed page
// (read from the log, decoded, mapped to CloudEvents, encoded), the
// handler called in process on pages of 1,000 reservation events, as the
// first consumer to read them (first=cpu-ns/event) and as a second one
// (cached=cpu-ns/event: the SKU's encoded events are shared).
func BenchmarkFeedPageHandler(b *testing.B) {
	records := benchsize.Pick(100_000, 2_000)
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

// fill defines campaign c and makes reservations 1..n of its SKU s
// (reserveMany).
func (s *benchServer) fill(b *testing.B, c string, n, callers int) {
	b.Helper()
	s.define(b, c)
	reserveMany(b, s.eng, c, n, callers)
}

// reserveMany makes reservations 1..n (request ids r1.., user ids u1..) of
// campaign c's SKU s from callers goroutines, in process (the engine, not
// HTTP).
func reserveMany(tb testing.TB, eng *actors.Engine, c string, n, callers int) {
	tb.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < callers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				res, err := eng.Reserve(context.Background(), c, "s", fmt.Sprint("r", i), fmt.Sprint("u", i))
				if err != nil || res.Outcome != sku.OutcomeAccepted {
					tb.Errorf("reserve %d: %+v %v", i, res, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkFeedTail: the CPU a consumer at the tail costs, without the
// reserve load's noise: consumers=N clients (feedConsumer, over loopback
// HTTP, in this process) read a 30,000-record log from its start in pages
// of 30 events (the page a tail consumer gets from one group commit in
// BenchmarkReserveWithConsumers), in step (readInStep). Reports the process's
// CPU (server, clients and the kernel's work for both) per event per
// consumer, and per page: multiplied by the reserve rate and the
// consumers, the CPU the feed takes from reserves on a CPU-bound machine.
// The null=N arms are the floor: the same clients read the same pages
// (bytes recorded from the feed) from a bare fasthttp server that answers
// each request from a map, so null's figure is what any HTTP page of that
// size costs here, and the difference is the feed's own.
func BenchmarkFeedTail(b *testing.B) {
	const pageSize = 30
	records := benchsize.Pick(30_000, 300)
	s := startBenchServer(b, wal.FsyncNeverBenchmarkOnly)
	defer s.stop()
	s.fill(b, "ft", records-1, 64)
	log, _, _ := s.eng.FeedLog("ft", "s")
	last := log.DurableIndex()
	pagePath := feedPath("ft", "s", fmt.Sprintf("?limit=%d&after=", pageSize))
	null := startNullFeed(b, s.base, pagePath, last)
	defer null.Shutdown()
	for _, arm := range []struct {
		name      string
		base      string
		consumers int
	}{{"consumers=1", s.base, 1}, {"consumers=4", s.base, 4}, {"null=1", null.base, 1}, {"null=4", null.base, 4}} {
		b.Run(arm.name, func(b *testing.B) {
			var cpu time.Duration
			events, pages := 0, 0
			for b.Loop() {
				start := cpuTime()
				fcs, err := readInStep(arm.base, pagePath, arm.consumers, last)
				if err != nil {
					b.Fatal(err)
				}
				cpu += cpuTime() - start
				for _, fc := range fcs {
					events, pages = events+fc.events, pages+fc.pages
				}
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(events), "cpu-ns/event/consumer")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(pages), "cpu-ns/page")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// readInStep has n consumers read pagePath's pages through last in step,
// as consumers at the tail do (one group commit wakes them all): each
// page is asked for by all of them at once, and the next once all have it.
func readInStep(base, pagePath string, n int, last uint64) ([]*feedConsumer, error) {
	fcs := make([]*feedConsumer, n)
	starts := make([]chan bool, n)
	done := make(chan error, n)
	for i := range fcs {
		fcs[i] = newFeedConsumer(base, "ft", "0s")
		fcs[i].path = pagePath
		starts[i] = make(chan bool)
		go func() {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			for range starts[i] {
				_, err := fcs[i].next(req, resp)
				done <- err
			}
		}()
	}
	defer func() {
		for _, s := range starts {
			close(s)
		}
	}()
	for fcs[0].progress.Load() < last {
		for _, s := range starts {
			s <- true
		}
		for range fcs {
			if err := <-done; err != nil {
				return nil, err
			}
		}
	}
	return fcs, nil
}

// nullFeed is a bare fasthttp server answering recorded feed pages by
// request URI: BenchmarkFeedTail's floor.
type nullFeed struct {
	*fasthttp.Server
	base string
}

// startNullFeed records every page of the feed at base (pagePath's pages
// from the start through last) and serves them on a loopback port.
func startNullFeed(b *testing.B, base, pagePath string, last uint64) *nullFeed {
	b.Helper()
	pages := map[string][]byte{}
	fc := newFeedConsumer(base, "ft", "0s")
	fc.path = pagePath
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	for fc.progress.Load() < last {
		uri := pagePath + fc.cursor
		if _, err := fc.next(req, resp); err != nil {
			b.Fatal(err)
		}
		pages[uri] = append([]byte(nil), resp.Body()...)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetContentType("application/json")
		ctx.SetBody(pages[string(ctx.RequestURI())])
	}}
	go srv.Serve(ln)
	return &nullFeed{Server: srv, base: "http://" + ln.Addr().String()}
}

// BenchmarkPathFeedTail: the feed's handler at the tail, one request at a
// time for instruction counts (valgrind --tool=callgrind
// --toggle-collect='*handleFeed', -cpu 1): each iteration makes 30
// reservations (a group commit's worth) and then 4 consumers read them
// from the same cursor (one reads the log and encodes, 3 find the SKU's
// cache filled). Instructions in handleFeed / (iterations × 120) is the
// server's cost per event per consumer.
func BenchmarkPathFeedTail(b *testing.B) {
	const perCommit, consumers = 30, 4
	handler := pathServer(b, 1_000_000_000, false)
	var ctx fasthttp.RequestCtx
	buf := make([]byte, 0, 64)
	read := func(cursor string) (next string, events int) {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.SetRequestURI(feedPath("bench", "s", "?after="+cursor))
		ctx.Request.Header.Set("Authorization", "Bearer "+testToken)
		handler(&ctx)
		body := ctx.Response.Body()
		if ctx.Response.StatusCode() != http.StatusOK {
			b.Fatalf("feed: %d %s", ctx.Response.StatusCode(), body)
		}
		tail := body[bytes.LastIndex(body, []byte(`"next_cursor":"`))+len(`"next_cursor":"`):]
		return string(tail[:bytes.IndexByte(tail, '"')]), bytes.Count(body, []byte(`"specversion"`))
	}
	cursor, _ := read("")
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		for range perCommit {
			n++
			buf = reserveOnce(b, handler, &ctx, buf, n, http.StatusAccepted)
		}
		var next string
		for range consumers {
			var events int
			if next, events = read(cursor); events != perCommit {
				b.Fatalf("a consumer read %d events, want %d", events, perCommit)
			}
		}
		cursor = next
	}
}
