package httpapi_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/httpapi"
)

// idleFeedClients is how many idle long polls and streams the idle tests
// hold open.
const idleFeedClients = 1000

// openFeedRequests opens n connections to the server at base and sends
// each the feed request of path (raw HTTP/1.1, sse: with Accept:
// text/event-stream); it reads nothing back. The connections close at
// the end of tb.
func openFeedRequests(tb testing.TB, base, path string, sse bool, n int) []net.Conn {
	tb.Helper()
	return openFeedRequestsWith(tb, &net.Dialer{}, base, path, sse, n)
}

// openFeedRequestsWith is openFeedRequests through dialer.
func openFeedRequestsWith(tb testing.TB, dialer *net.Dialer, base, path string, sse bool, n int) []net.Conn {
	tb.Helper()
	request := "GET " + path + " HTTP/1.1\r\nHost: feed\r\nAuthorization: Bearer " + testToken + "\r\n"
	if sse {
		request += "Accept: text/event-stream\r\n"
	}
	request += "\r\n"
	conns := make([]net.Conn, 0, n)
	tb.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range n {
		c, err := dialer.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			tb.Fatal(err)
		}
		conns = append(conns, c)
		if _, err := c.Write([]byte(request)); err != nil {
			tb.Fatal(err)
		}
	}
	return conns
}

// metricAt returns one series of the /metrics of the server at base (""
// if absent).
func metricAt(tb testing.TB, base, series string) string {
	tb.Helper()
	r := call(tb, http.MethodGet, base+"/metrics", nil, nil)
	for _, line := range strings.Split(string(r.raw), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}

// metricCount is a counter or gauge of metricAt as an integer.
func metricCount(tb testing.TB, base, series string) int64 {
	tb.Helper()
	v := metricAt(tb, base, series)
	n, err := strconv.ParseFloat(v, 64)
	if err != nil {
		tb.Fatalf("%s = %q", series, v)
	}
	return int64(n)
}

// waitMetricAt waits until series of the server at base reads want. The
// bound is for a server that never gets there, not a time the test
// counts on.
func waitMetricAt(tb testing.TB, base, series string, want int) {
	tb.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(5 * time.Millisecond) {
		got := metricAt(tb, base, series)
		if got == fmt.Sprint(want) {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s = %s after 2 minutes, want %d", series, got, want)
		}
	}
}

// waitMetric is waitMetricAt on ts.
func (ts *testServer) waitMetric(series string, want int) {
	ts.t.Helper()
	waitMetricAt(ts.t, ts.base, series, want)
}

// wakeups is the series of seckill_feed_wakeups_total of one cause.
func wakeups(cause string) string { return `seckill_feed_wakeups_total{cause="` + cause + `"}` }

// openAtTail defines campaign c (one SKU, s) and opens n feed requests of
// it after its last record (query appended to after=CURSOR).
func openAtTail(t *testing.T, ts *testServer, c, query string, sse bool, n int) []net.Conn {
	t.Helper()
	ts.define(campaign(c, "15m", map[string]int{"s": 5}))
	return openAfter(t, ts, c, "s", query, sse, n)
}

// openAfter opens n feed requests of c's SKU s after its last record.
func openAfter(t *testing.T, ts *testServer, c, s, query string, sse bool, n int) []net.Conn {
	t.Helper()
	tail := ts.page(c, s, "").NextCursor
	return openFeedRequests(t, ts.base, feedPath(c, s, "?after="+tail+query), sse, n)
}

// sseReader reads a stream's lines: the headers, then "retry: 1000",
// then what the stream sends; it counts the heartbeats it read.
type sseReader struct {
	t     *testing.T
	r     *bufio.Reader
	c     net.Conn
	beats int
}

// newSSEReader reads the response's headers (the body is chunked) and
// the retry line.
func newSSEReader(t *testing.T, c net.Conn) *sseReader {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream answered %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &sseReader{t: t, r: bufio.NewReader(resp.Body), c: c}
	if got := s.line(); got != "retry: 1000" {
		t.Fatalf("stream starts with %q", got)
	}
	s.line()
	return s
}

// line reads one line without its newline; the read deadline is a bound
// for a hung server only.
func (s *sseReader) line() string {
	s.t.Helper()
	s.c.SetReadDeadline(time.Now().Add(time.Minute))
	line, err := s.r.ReadString('\n')
	if err != nil {
		s.t.Fatalf("stream: %v", err)
	}
	line = strings.TrimRight(line, "\r\n")
	if line == ": ping" {
		s.beats++
	}
	return line
}

// pings reads n heartbeats and fails on anything else.
func (s *sseReader) pings(n int) {
	s.t.Helper()
	for i := 0; i < n; i++ {
		if got := s.line(); got != ": ping" {
			s.t.Fatalf("after %d heartbeats the stream sent %q", i, got)
		}
		if got := s.line(); got != "" {
			s.t.Fatalf("a heartbeat followed by %q", got)
		}
	}
}

// 1,000 idle long polls (wait=60s) wake for nothing but a record of their
// SKU: each waits on its SKU's durable channel and one timer (a per-poll
// ticker, or a loop that polls, would count wake-ups). While a stream on
// another SKU of the campaign sends heartbeats (the server's timers fire)
// and gets a record of its own, the server counts no more wake-ups than
// that stream's; one record of their SKU then wakes and answers each of
// the polls exactly once. What their idleness costs in CPU is
// BenchmarkFeedIdleLongPolls's.
func TestFeedIdleLongPollsWakeOnlyForRecords(t *testing.T) {
	ts := startServer(t, serverOptions{config: func(c *httpapi.Config) { c.StatsInterval, c.FeedHeartbeat = -1, 50*time.Millisecond }})
	ts.define(campaign("il", "15m", map[string]int{"s": 5, "t": 5}))
	polls := openAfter(t, ts, "il", "s", "&wait=60s", false, idleFeedClients)
	ts.waitMetric("seckill_feed_waiting", idleFeedClients)

	// The clock: a stream of SKU t, until the server has sent some
	// heartbeats and the record of t, then half-closed and read to its end
	// (so every heartbeat it sent is counted). It woke at most once per
	// heartbeat (a heartbeat is sent without a wake-up when reading the
	// log took longer than its period), once for the record (by the record,
	// or at a deadline that found it), and once for the check that found
	// its client gone.
	clock := newSSEReader(t, openAfter(t, ts, "il", "t", "", true, 1)[0])
	clock.pings(5)
	want(t, ts.reserve("il", "t", "rt", "ut"), http.StatusAccepted, "")
	for clock.line() != "event: seckill.reservation.created" {
	}
	if err := clock.c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	clock.untilEOF(50)
	ts.waitMetric("seckill_feed_streams", 0)
	if got := allWakeups(t, ts.base); got > int64(clock.beats)+2 {
		t.Fatalf("%d wake-ups beside the stream's %d heartbeats, its record and its last check: the long polls woke", got, clock.beats)
	}
	if got := metricCount(t, ts.base, "seckill_feed_waiting"); got != idleFeedClients {
		t.Fatalf("seckill_feed_waiting = %d, want the %d long polls", got, idleFeedClients)
	}

	// Every poll waits (it never woke): the record of s wakes each once.
	before := metricCount(t, ts.base, wakeups("record"))
	want(t, ts.reserve("il", "s", "rs", "us"), http.StatusAccepted, "")
	for i, c := range polls {
		c.SetReadDeadline(time.Now().Add(time.Minute))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("long poll %d: %v", i, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || strings.Count(string(body), `"specversion"`) != 1 {
			t.Fatalf("long poll %d: %d %s %v", i, resp.StatusCode, body, err)
		}
	}
	if got := metricCount(t, ts.base, wakeups("record")) - before; got != idleFeedClients {
		t.Fatalf("%d wake-ups by the record, want %d: one per long poll", got, idleFeedClients)
	}
}

// allWakeups sums seckill_feed_wakeups_total over its causes.
func allWakeups(tb testing.TB, base string) int64 {
	tb.Helper()
	var n int64
	for _, cause := range []string{"record", "definition", "deadline", "shutdown"} {
		n += metricCount(tb, base, wakeups(cause))
	}
	return n
}

// 1,000 idle SSE streams stay open and send nothing but their heartbeats,
// and each wakes only at its heartbeat: a stream waits a whole heartbeat
// between two wake-ups, so however slow the machine, the server counts at
// most one per stream per heartbeat of the time the streams were open
// (and no other). Each sends 9 at 250 ms, so every stream is checked for
// its client at least once after the connection's read deadline
// (ReadTimeout 2 s) passed: a stream must not take that deadline for its
// client gone. What their heartbeats cost in CPU is
// BenchmarkFeedIdleStreams's.
func TestFeedIdleStreamsCostOnlyHeartbeats(t *testing.T) {
	const heartbeat, readTimeout, beats = 250 * time.Millisecond, 2 * time.Second, 9
	if beats*heartbeat <= readTimeout {
		t.Fatal("the streams must send heartbeats after the read deadline")
	}
	ts := startServer(t, serverOptions{config: func(c *httpapi.Config) {
		c.StatsInterval, c.FeedHeartbeat, c.ReadTimeout = -1, heartbeat, readTimeout
	}})
	ts.define(campaign("is", "15m", map[string]int{"s": 5}))
	tail := ts.page("is", "s", "").NextCursor
	opened := time.Now()
	conns := openFeedRequests(t, ts.base, feedPath("is", "s", "?after="+tail), true, idleFeedClients)
	ts.waitMetric("seckill_feed_streams", idleFeedClients)
	for _, c := range conns {
		newSSEReader(t, c).pings(beats)
	}
	if got := metricCount(t, ts.base, "seckill_feed_streams"); got != idleFeedClients {
		t.Fatalf("seckill_feed_streams = %d after %d heartbeats each, want %d", got, beats, idleFeedClients)
	}
	for _, cause := range []string{"record", "definition", "shutdown"} {
		if got := metricCount(t, ts.base, wakeups(cause)); got != 0 {
			t.Fatalf("%d wake-ups by %s: idle streams wake only at their heartbeats", got, cause)
		}
	}
	most := idleFeedClients * (int64(time.Since(opened)/heartbeat) + 1)
	if got := metricCount(t, ts.base, wakeups("deadline")); got > most {
		t.Fatalf("%d wake-ups at a deadline: more than one per stream per heartbeat (%d)", got, most)
	}
}

// A stream outlives its connection's read deadline (the one the server
// set for reading the request, ReadTimeout): the check for a closed
// client before each heartbeat must not take the passed deadline for one.
// The 11th heartbeat is sent at least 1.1 s after the stream started,
// after ReadTimeout however slow the machine.
func TestFeedStreamOutlivesReadTimeout(t *testing.T) {
	const heartbeat, readTimeout, beats = 100 * time.Millisecond, time.Second, 11
	ts := startServer(t, serverOptions{config: func(c *httpapi.Config) { c.FeedHeartbeat, c.ReadTimeout = heartbeat, readTimeout }})
	newSSEReader(t, openAtTail(t, ts, "rt", "", true, 1)[0]).pings(beats)
}

// The heartbeat: a stream with nothing to send writes a ": ping" comment
// every Config.FeedHeartbeat, never sooner (the n-th is sent n heartbeats
// after the stream started at the earliest, so it cannot arrive sooner
// however loaded the machine), and the default period is 15 s.
func TestFeedHeartbeat(t *testing.T) {
	if httpapi.DefaultFeedHeartbeat != 15*time.Second {
		t.Fatalf("DefaultFeedHeartbeat = %s, want 15s", httpapi.DefaultFeedHeartbeat)
	}
	const heartbeat = 100 * time.Millisecond
	ts := startServer(t, serverOptions{config: func(c *httpapi.Config) { c.FeedHeartbeat = heartbeat }})
	ts.define(campaign("hb", "15m", map[string]int{"s": 5}))
	tail := ts.page("hb", "s", "").NextCursor
	opened := time.Now()
	s := newSSEReader(t, openFeedRequests(t, ts.base, feedPath("hb", "s", "?after="+tail), true, 1)[0])
	for n := 1; n <= 4; n++ {
		s.pings(1)
		if since := time.Since(opened); since < time.Duration(n)*heartbeat {
			t.Fatalf("heartbeat %d %s after the stream opened, heartbeat %s", n, since, heartbeat)
		}
	}
}

// A client that closes its end of a stream is let go at the stream's next
// heartbeat: before each, the stream peeks at its socket. A client that
// shuts down only its sending side (a FIN; it still reads) is found by
// that peek alone, since writes to it still succeed: its stream ends and
// the server closes the connection. One that closes the socket is let go
// too. The stream count drops, and the other streams go on.
func TestFeedVanishedClientFreedWithinHeartbeat(t *testing.T) {
	const heartbeat, streams = 200 * time.Millisecond, 20
	ts := startServer(t, serverOptions{config: func(c *httpapi.Config) { c.FeedHeartbeat = heartbeat }})
	conns := openAtTail(t, ts, "vc", "", true, streams)
	ts.waitMetric("seckill_feed_streams", streams)
	readers := make([]*sseReader, streams)
	start := time.Now()
	for i, c := range conns {
		readers[i] = newSSEReader(t, c)
		if i < streams/4 {
			if err := c.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range conns[streams/4 : streams/2] {
		c.Close()
	}
	for _, s := range readers[:streams/4] {
		s.untilEOF(50) // those sent before the close and one more: a few, unless the test stalled for 50 heartbeats
	}
	ts.waitMetric("seckill_feed_streams", streams/2)
	t.Logf("%d closed streams freed in %s (heartbeat %s)", streams/2, time.Since(start), heartbeat)
	// The others still stream: each gets the next event.
	ts.reserve("vc", "s", "r1", "u1")
	for _, s := range readers[streams/2:] {
		for s.line() != "event: seckill.reservation.created" {
		}
	}
	if got := metricCount(t, ts.base, "seckill_feed_streams"); got != streams/2 {
		t.Fatalf("seckill_feed_streams = %d, want %d", got, streams/2)
	}
}

// untilEOF reads until the server closes the stream, counting the
// heartbeats it reads, and fails after more than max of them: a stream
// that should end at its next heartbeat does not send max more (a count
// of heartbeats, not a time: a loaded machine only sends them later).
func (s *sseReader) untilEOF(max int) {
	s.t.Helper()
	for start := s.beats; s.beats-start <= max; {
		s.c.SetReadDeadline(time.Now().Add(time.Minute))
		line, err := s.r.ReadString('\n')
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) { // the server closed it
			return
		}
		if err != nil {
			s.t.Fatalf("stream: %v", err)
		}
		if line == ": ping\n" {
			s.beats++
		}
	}
	s.t.Fatalf("the stream sent %d heartbeats after its client closed its end", max+1)
}

// pendingBytes reports whether data waits unread in c's receive buffer
// (a peek that does not wait).
func pendingBytes(t *testing.T, c net.Conn) bool {
	t.Helper()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	raw.Control(func(fd uintptr) {
		var b [1]byte
		n, _, _ = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	})
	return n > 0
}

// Stuck consumers (they ask for full pages and never read them) hold no
// actor time: reserves, payments (whose events need the actor's look-ups)
// and another consumer's pages go on while they hang in their writes. The
// write timeout is 10 minutes: a reserve that waited for a stuck write
// would fail the test at the client's timeout.
func TestFeedStuckConsumersHoldNoActor(t *testing.T) {
	const records, stuck = 2000, 20
	ts := startServer(t, serverOptions{config: func(c *httpapi.Config) { c.WriteTimeout = 10 * time.Minute }})
	ts.define(campaign("sc", "15m", map[string]int{"s": 1_000_000}))
	reserveMany(t, ts.engine, "sc", records, 32)
	// A receive buffer of 4 KiB and nobody reading: each ~500 KB answer
	// stays in the server's write.
	small := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		c.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return err
	}}
	conns := openFeedRequestsWith(t, small, ts.base, feedPath("sc", "s", "?limit=1000"), false, stuck)
	// Their pages are read and being written once their answers arrive.
	for i, c := range conns {
		for deadline := time.Now().Add(2 * time.Minute); !pendingBytes(t, c); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("stuck consumer %d: no answer after 2 minutes", i)
			}
		}
	}
	for i := range 20 {
		r := ts.reserve("sc", "s", fmt.Sprint("late", i), fmt.Sprint("late", i))
		want(t, r, http.StatusAccepted, "")
		want(t, ts.post("/v1/reservations/"+r.str("reservation_id")+"/payment", map[string]any{"payment_id": fmt.Sprint("p", i), "amount": 1}), http.StatusOK, "")
	}
	p := ts.page("sc", "s", fmt.Sprintf("?after=%s-%d", strings.SplitN(ts.page("sc", "s", "?limit=1").NextCursor, "-", 2)[0], records+1))
	if len(p.Events) != 40 || p.Events[39].Type != "seckill.reservation.paid" {
		t.Fatalf("the late records' page: %d events", len(p.Events))
	}
	for _, c := range conns {
		c.Close()
	}
}
