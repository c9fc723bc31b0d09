package httpapi_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/httpapi"
)

// idleFeedClients is how many idle long polls and streams the idle tests
// hold open (the figure).
const idleFeedClients = 1000

// openFeedRequests opens n connections and sends each the feed request of
// path (raw HTTP/1.1, sse: with Accept: text/event-stream); it reads
// nothing back. The connections close at the test's end.
func openFeedRequests(t *testing.T, ts *testServer, path string, sse bool, n int) []net.Conn {
	t.Helper()
	return openFeedRequestsWith(t, ts, &net.Dialer{}, path, sse, n)
}

// openFeedRequestsWith is openFeedRequests through dialer.
func openFeedRequestsWith(t *testing.T, ts *testServer, dialer *net.Dialer, path string, sse bool, n int) []net.Conn {
	t.Helper()
	request := "GET " + path + " HTTP/1.1\r\nHost: feed\r\nAuthorization: Bearer " + testToken + "\r\n"
	if sse {
		request += "Accept: text/event-stream\r\n"
	}
	request += "\r\n"
	conns := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range n {
		c, err := dialer.Dial("tcp", strings.TrimPrefix(ts.base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if _, err := c.Write([]byte(request)); err != nil {
			t.Fatal(err)
		}
	}
	return conns
}

// waitMetric waits until /metrics shows series at want, or fails after
// timeout.
func (ts *testServer) waitMetric(series string, want int, timeout time.Duration) time.Duration {
	ts.t.Helper()
	start := time.Now()
	for ts.metric(series) != fmt.Sprint(want) {
		if time.Since(start) > timeout {
			ts.t.Fatalf("%s = %s after %s, want %d", series, ts.metric(series), timeout, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}

// idleCPU is the process's CPU over an idle interval of d, after a
// collection (so that one the set-up's garbage calls for does not land in
// it).
func idleCPU(d time.Duration) time.Duration {
	runtime.GC()
	start := processCPU()
	time.Sleep(d)
	return time.Duration(processCPU() - start)
}

// idleInterval is what the idle tests measure over.
const idleInterval = 2 * time.Second

// openAtTail defines campaign c (one SKU, s) and opens n feed requests of
// it after its last record (query appended to after=CURSOR).
func openAtTail(t *testing.T, ts *testServer, c, query string, sse bool, n int) []net.Conn {
	t.Helper()
	ts.define(campaign(c, "15m", map[string]int{"s": 5}))
	tail := ts.page(c, "s", "").NextCursor
	return openFeedRequests(t, ts, feedPath(c, "s", "?after="+tail+query), sse, n)
}

// idleCPUOf measures the process's CPU over idleInterval before and while
// idleFeedClients idle feed requests (openAtTail's) are held, once gauge
// counts them all.
func idleCPUOf(t *testing.T, ts *testServer, c, query string, sse bool, gauge string) (without, with time.Duration) {
	t.Helper()
	without = idleCPU(idleInterval)
	openAtTail(t, ts, c, query, sse, idleFeedClients)
	ts.waitMetric(gauge, idleFeedClients, 30*time.Second)
	with = idleCPU(idleInterval)
	if got := ts.metric(gauge); got != fmt.Sprint(idleFeedClients) {
		t.Fatalf("%s = %s after the interval, want %d", gauge, got, idleFeedClients)
	}
	return without, with
}

// 1,000 idle long polls (wait=60s) cost no CPU: each waits on its SKU's
// durable channel and one timer, so the process's CPU over an idle
// interval stays at what it is without them (a per-poll ticker, or a
// loop that polls, would show: 1,000 polls ticking even once a second
// cost milliseconds, a busy loop a whole core).
func TestFeedIdleLongPollsCostNoCPU(t *testing.T) {
	ts := startServer(t, serverOptions{config: func(c *httpapi.Config) { c.StatsInterval = -1 }})
	baseline, held := idleCPUOf(t, ts, "il", "&wait=60s", false, "seckill_feed_waiting")
	t.Logf("CPU over %s: %s without polls, %s with %d idle long polls", idleInterval, baseline, held, idleFeedClients)
	if extra := held - baseline; extra > idleInterval/100 { // 1% of a core: 10 µs per poll per second
		t.Fatalf("%d idle long polls cost %s of CPU over %s (%s without them)", idleFeedClients, held, idleInterval, baseline)
	}
}

// 1,000 idle SSE streams cost only their heartbeats: the process's CPU
// over an interval, beyond what it is without them, divided by the
// heartbeats sent in it stays small (a heartbeat is a timer, a peek at
// the socket and an 8-byte write); nothing else of theirs runs.
func TestFeedIdleStreamsCostOnlyHeartbeats(t *testing.T) {
	const heartbeat = 250 * time.Millisecond
	ts := startServer(t, serverOptions{config: func(c *httpapi.Config) { c.StatsInterval, c.FeedHeartbeat = -1, heartbeat }})
	baseline, held := idleCPUOf(t, ts, "is", "", true, "seckill_feed_streams")
	heartbeats := idleFeedClients * int(idleInterval/heartbeat)
	perHeartbeat := (held - baseline) / time.Duration(heartbeats)
	t.Logf("CPU over %s: %s without streams, %s with %d idle streams (%d heartbeats): %s a heartbeat",
		idleInterval, baseline, held, idleFeedClients, heartbeats, perHeartbeat)
	bound := 100 * time.Microsecond
	if raceEnabled {
		bound *= 5
	}
	if perHeartbeat > bound {
		t.Fatalf("idle streams cost %s of CPU a heartbeat (bound %s)", perHeartbeat, bound)
	}
}

// The heartbeat: a stream with nothing to send writes a ": ping" comment
// every Config.FeedHeartbeat, and the default period is 15 s.
func TestFeedHeartbeat(t *testing.T) {
	if httpapi.DefaultFeedHeartbeat != 15*time.Second {
		t.Fatalf("DefaultFeedHeartbeat = %s, want 15s", httpapi.DefaultFeedHeartbeat)
	}
	const heartbeat = 100 * time.Millisecond
	ts := startServer(t, serverOptions{config: func(c *httpapi.Config) { c.FeedHeartbeat = heartbeat }})
	conn := openAtTail(t, ts, "hb", "", true, 1)[0]
	r := bufio.NewReader(conn)
	var pings []time.Time
	for len(pings) < 4 {
		conn.SetReadDeadline(time.Now().Add(10 * heartbeat))
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("after %d pings: %v", len(pings), err)
		}
		if line == ": ping\n" {
			pings = append(pings, time.Now())
		}
	}
	for i := 1; i < len(pings); i++ {
		if gap := pings[i].Sub(pings[i-1]); gap < heartbeat*8/10 {
			t.Fatalf("pings %s apart, heartbeat %s", gap, heartbeat)
		}
	}
}

// A stream's resources (its goroutine, its connection, the feed's
// stream count) are freed within one heartbeat of its client closing the
// socket; the connections of streams still open are kept.
func TestFeedVanishedClientFreedWithinHeartbeat(t *testing.T) {
	const heartbeat, streams = 300 * time.Millisecond, 20
	ts := startServer(t, serverOptions{config: func(c *httpapi.Config) { c.FeedHeartbeat = heartbeat }})
	conns := openAtTail(t, ts, "vc", "", true, streams)
	ts.waitMetric("seckill_feed_streams", streams, 10*time.Second)
	for _, c := range conns[:streams/2] {
		c.Close()
	}
	// The margin is for a loaded machine; without the heartbeat's check a
	// stream would live until a write failed, a second heartbeat or more.
	took := ts.waitMetric("seckill_feed_streams", streams/2, heartbeat+700*time.Millisecond)
	t.Logf("%d closed streams freed in %s (heartbeat %s)", streams/2, took, heartbeat)
	// The others still stream: each gets the next event.
	ts.reserve("vc", "s", "r1", "u1")
	for _, c := range conns[streams/2:] {
		r := bufio.NewReader(c)
		for {
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(line, "event: seckill.reservation.created") {
				break
			}
		}
	}
	if got := ts.metric("seckill_feed_streams"); got != fmt.Sprint(streams/2) {
		t.Fatalf("seckill_feed_streams = %s, want %d", got, streams/2)
	}
}

// Stuck consumers (they ask for full pages and never read them) hold no
// actor time: reserves, payments (whose events need the actor's look-ups)
// and another consumer's pages go on while they hang in their writes.
func TestFeedStuckConsumersHoldNoActor(t *testing.T) {
	const records, stuck = 2000, 20
	ts := startServer(t, serverOptions{})
	ts.define(campaign("sc", "15m", map[string]int{"s": 1_000_000}))
	reserveMany(t, ts.engine, "sc", records, 32)
	// A receive buffer of 4 KiB and nobody reading: each ~500 KB answer
	// stays in the server's write (until the write timeout).
	small := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		c.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return err
	}}
	conns := openFeedRequestsWith(t, ts, small, feedPath("sc", "s", "?limit=1000"), false, stuck)
	time.Sleep(200 * time.Millisecond) // their pages are read and being written
	start := time.Now()
	for i := range 20 {
		r := ts.reserve("sc", "s", fmt.Sprint("late", i), fmt.Sprint("late", i))
		want(t, r, http.StatusAccepted, "")
		want(t, ts.post("/v1/reservations/"+r.str("reservation_id")+"/payment", map[string]any{"payment_id": fmt.Sprint("p", i), "amount": 1}), http.StatusOK, "")
	}
	p := ts.page("sc", "s", fmt.Sprintf("?after=%s-%d", strings.SplitN(ts.page("sc", "s", "?limit=1").NextCursor, "-", 2)[0], records+1))
	if len(p.Events) != 40 || p.Events[39].Type != "seckill.reservation.paid" {
		t.Fatalf("the late records' page: %d events", len(p.Events))
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("20 reserves, 20 payments and a page took %s beside %d stuck consumers", took, stuck)
	}
	for _, c := range conns {
		c.Close()
	}
}
