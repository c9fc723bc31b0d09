package httpapi_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/internal/pacedread"
)

// A streamed answer's writes each get the write timeout: a client that
// keeps reading is never cut, however long the whole answer takes.

// reserveMany makes n reservations of the SKU in batches of 1,000, their
// ids padded to 64 characters: a reservation's JSON is some 330 bytes.
func (ts *testServer) reserveMany(campaignID, skuID string, from, n int) {
	ts.t.Helper()
	for first := from; first < from+n; first += 1000 {
		var items []string
		for i := first; i < min(first+1000, from+n); i++ {
			items = append(items, fmt.Sprintf(`{"request_id":"r%063d","user_id":"u%063d"}`, i, i))
		}
		r, results := ts.postBatch(campaignID, skuID, items)
		want(ts.t, r, http.StatusOK, "")
		for _, res := range results {
			if res.Status != http.StatusAccepted {
				ts.t.Fatalf("batch item: %d %s", res.Status, res.Body)
			}
		}
	}
}

// smallBuffers gives the connections a listener accepts a 64 KiB send
// buffer, so that the kernel holds little of an answer the client has
// not read yet.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tcp, ok := c.(*net.TCPConn); ok {
		tcp.SetWriteBuffer(64 << 10)
	}
	return c, err
}

// An export that takes several write timeouts to read (some 5 MB, read at
// 0.8 MB/s at most, with 2 s of write timeout, long beside a stall of the
// reader on a loaded machine; the kernel holds some 0.3 MB of it) arrives
// whole.
func TestExportLongerThanTheWriteTimeout(t *testing.T) {
	const writeTimeout = 2 * time.Second
	ts := startServer(t, serverOptions{
		config: func(c *httpapi.Config) { c.WriteTimeout = writeTimeout },
		listen: func(l net.Listener) net.Listener { return smallBuffers{l} },
	})
	ts.define(campaign("ex", "15m", map[string]int{"s": 15000}))
	ts.reserveMany("ex", "s", 0, 15000)

	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(64 << 10)
	fmt.Fprintf(conn, "GET /admin/campaigns/ex/skus/s/reservations HTTP/1.1\r\nHost: seckill\r\nAuthorization: Bearer %s\r\n\r\n", testToken)
	started := time.Now()
	resp, err := http.ReadResponse(bufio.NewReader(pacedread.Steady(conn)), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	took := time.Since(started)
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	if err != nil || resp.StatusCode != http.StatusOK || len(lines) != 15001 || !strings.HasPrefix(lines[15000], `{"as_of_index":`) {
		t.Fatalf("export read in %v (write timeout %v): status %d, %d bytes, %d lines, %v; want 15,000 rows and the last line",
			took, writeTimeout, resp.StatusCode, len(body), len(lines), err)
	}
	if took < 2*writeTimeout {
		t.Fatalf("the export took %v to read: not longer than the write timeout %v, so it proves nothing", took, writeTimeout)
	}
}

// A stream that waited for events longer than the write timeout writes
// the next ones, more than fasthttp's 4 KiB buffer at once, whole.
func TestStreamWritesEventsAfterAWaitLongerThanTheWriteTimeout(t *testing.T) {
	// Long beside a stall of the server between a write's deadline and
	// the write on a loaded machine.
	const writeTimeout = time.Second
	ts := startServer(t, serverOptions{config: func(c *httpapi.Config) {
		c.WriteTimeout = writeTimeout
		c.FeedHeartbeat = time.Hour // no write between the events
	}})
	ts.define(campaign("st", "15m", map[string]int{"s": 5000}))
	req, _ := http.NewRequest(http.MethodGet, ts.base+feedPath("st", "s", ""), nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	events := func(n int) int {
		seen := 0
		for seen < n && lines.Scan() {
			if strings.HasPrefix(lines.Text(), "event: ") {
				seen++
			}
		}
		return seen
	}
	if events(1) != 1 { // the definition, written and flushed
		t.Fatalf("the stream's first event: %v", lines.Err())
	}
	// The stream now waits for events: let its last write's deadline pass.
	time.Sleep(2 * writeTimeout)
	ts.reserveMany("st", "s", 0, 100)
	if got := events(100); got != 100 {
		t.Fatalf("the stream ended after %d of 100 events written at once after a wait of twice the write timeout: %v", got, lines.Err())
	}
}
