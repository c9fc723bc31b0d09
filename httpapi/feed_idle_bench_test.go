package httpapi_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/internal/benchsize"
	"github.com/seckill/seckill/wal"
)

// idleCost is what one window of an idle benchmark measured: the
// process's CPU over the window without the idle feed readers and with
// them, and the wake-ups the server counted in the window with them.
type idleCost struct {
	without, with time.Duration
	wakeups       int64 // seckill_feed_wakeups_total, every cause
}

// idleCPU is the process's CPU over an idle window of d, after a
// collection (so that one the set-up's garbage calls for does not land in
// it).
func idleCPU(d time.Duration) time.Duration {
	runtime.GC()
	start := cpuTime()
	time.Sleep(d)
	return cpuTime() - start
}

// measureIdle runs b.N windows of d, each on a fresh server (tuned by
// config) with campaign c defined: the process's CPU without readers,
// then with n feed requests of c's SKU s after its last record (query
// appended to after=CURSOR; sse: streams) held open once gauge counts
// them all, and the wake-ups meanwhile. The server's shutdown ends the
// readers.
func measureIdle(b *testing.B, c, query string, sse bool, gauge string, n int, d time.Duration, config func(*httpapi.Config)) idleCost {
	var total idleCost
	for b.Loop() {
		s := startBenchServerWith(b, wal.FsyncAlways, config)
		s.define(b, c)
		tail := call(b, "GET", s.base+feedPath(c, "s", ""), nil, map[string]string{"Authorization": "Bearer " + testToken}).str("next_cursor")
		total.without += idleCPU(d)
		openFeedRequests(b, s.base, feedPath(c, "s", "?after="+tail+query), sse, n)
		waitMetricAt(b, s.base, gauge, n)
		before := allWakeups(b, s.base)
		total.with += idleCPU(d)
		total.wakeups += allWakeups(b, s.base) - before
		s.stop()
	}
	return total
}

// BenchmarkFeedIdleLongPolls: the CPU 1,000 idle long polls (wait=60s)
// over loopback cost: the process's CPU over a 2 s window with them,
// beside the same window without them (cpu-ms/window-with and -without),
// and per poll per second (cpu-ns/poll/s); wakeups/window is what the
// server counted meanwhile (0: each poll waits on its SKU's durable
// channel and one timer).
func BenchmarkFeedIdleLongPolls(b *testing.B) {
	n, d := benchsize.Pick(1000, 20), benchsize.Pick(2*time.Second, 50*time.Millisecond)
	cost := measureIdle(b, "il", "&wait=60s", false, "seckill_feed_waiting", n, d, func(c *httpapi.Config) { c.StatsInterval = -1 })
	windows := float64(b.N)
	b.ReportMetric(float64(cost.without.Microseconds())/1e3/windows, "cpu-ms/window-without")
	b.ReportMetric(float64(cost.with.Microseconds())/1e3/windows, "cpu-ms/window-with")
	b.ReportMetric(float64((cost.with-cost.without).Nanoseconds())/windows/float64(n)/d.Seconds(), "cpu-ns/poll/s")
	b.ReportMetric(float64(cost.wakeups)/windows, "wakeups/window")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkFeedIdleStreams: the CPU 1,000 idle SSE streams at a 250 ms
// heartbeat over loopback cost: the process's CPU over a 2 s window with
// them and without them, and per heartbeat (cpu-ns/heartbeat: the
// difference over the wake-ups the server counted in the window, each a
// heartbeat: a timer, a peek at the socket and an 8-byte write).
func BenchmarkFeedIdleStreams(b *testing.B) {
	n, d := benchsize.Pick(1000, 20), benchsize.Pick(2*time.Second, 50*time.Millisecond)
	heartbeat := benchsize.Pick(250*time.Millisecond, 10*time.Millisecond)
	cost := measureIdle(b, "is", "", true, "seckill_feed_streams", n, d, func(c *httpapi.Config) { c.StatsInterval, c.FeedHeartbeat = -1, heartbeat })
	windows := float64(b.N)
	b.ReportMetric(float64(cost.without.Microseconds())/1e3/windows, "cpu-ms/window-without")
	b.ReportMetric(float64(cost.with.Microseconds())/1e3/windows, "cpu-ms/window-with")
	if cost.wakeups > 0 {
		b.ReportMetric(float64((cost.with-cost.without).Nanoseconds())/float64(cost.wakeups), "cpu-ns/heartbeat")
	}
	b.ReportMetric(float64(cost.wakeups)/windows, "heartbeats/window")
	b.ReportMetric(0, "ns/op")
}
