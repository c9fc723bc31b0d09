package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/httpapi/httpapitest"
	"github.com/seckill/seckill/internal/etcdtest"
	"github.com/seckill/seckill/internal/pacedread"
	"github.com/seckill/seckill/ledger"
)

// The feed's streamed answers (the export, an SSE stream, a long poll)
// pass through the router as they come from the cell: a reader of a long
// export, a stream that waits for its next events, and a long poll are
// not answered 503 CELL_UNAVAILABLE once --timeout has passed.

const streamToken = "router-stream-token"

// streamCell runs a seckilld cell (engine and HTTP service) in process
// and a router with --timeout timeout whose default cell it is, and
// returns a client of the cell and the router's base URL.
func streamCell(t *testing.T, timeout time.Duration) (*client.Client, string) {
	t.Helper()
	c, base, _, _ := streamRouter(t, timeout)
	return c, base
}

// streamRouter is streamCell, also returning the router and its server.
// The cell's streams write no heartbeat.
func streamRouter(t *testing.T, timeout time.Duration) (*client.Client, string, *router, *fasthttp.Server) {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	e, err := actors.Open(actors.Config{DataDir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	cellBase := httpapitest.Serve(t, httpapi.Config{Engine: e, Feed: feed.New(e), AdminToken: streamToken, Logger: quiet,
		FeedHeartbeat: time.Hour})
	c, err := client.New(client.Options{BaseURL: cellBase, AdminToken: streamToken})
	if err != nil {
		t.Fatal(err)
	}
	etcd := etcdtest.Start(t)
	lc, err := ledger.Dial([]string{etcd.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lc.Close() })
	r, err := newRouter(options{cells: "c1=" + cellBase, timeout: timeout}, ledger.New(lc, ""))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := r.server()
	go srv.Serve(httpapi.LingeringListener(ln, srv.ReadTimeout))
	t.Cleanup(func() { r.shutdown(srv) })
	return c, "http://" + ln.Addr().String(), r, srv
}

// defineStreamed defines campaign campaignID of one SKU "s" of units.
func defineStreamed(t *testing.T, c *client.Client, campaignID string, units int64) {
	t.Helper()
	start := time.Now().Add(-time.Minute).Truncate(time.Second)
	if err := c.PutCampaign(context.Background(), client.Campaign{CampaignID: campaignID, StartAt: start, EndAt: start.Add(time.Hour),
		PaymentWindow: 15 * time.Minute, SKUs: []client.CampaignSKU{{SKUID: "s", SaleLimit: units}}}); err != nil {
		t.Fatal(err)
	}
}

// reserveStreamed makes n reservations of campaignID's SKU "s", users
// from..from+n-1, in batches of 1,000, their ids padded to 64 characters
// (an export row is then some 330 bytes).
func reserveStreamed(t *testing.T, c *client.Client, campaignID string, from, n int) {
	t.Helper()
	for first := from; first < from+n; first += 1000 {
		var items []client.BatchItem
		for i := first; i < min(first+1000, from+n); i++ {
			items = append(items, client.BatchItem{UserID: fmt.Sprintf("u%063d", i), RequestID: fmt.Sprintf("r%063d", i)})
		}
		results, err := c.ReserveBatch(context.Background(), campaignID, "s", items)
		if err != nil {
			t.Fatal(err)
		}
		for _, res := range results {
			if res.Err != nil {
				t.Fatalf("batch item %s: %v", res.RequestID, res.Err)
			}
		}
	}
}

// An export that takes several --timeout to read through the router (some
// 5 MB at 0.8 MB/s at most through small socket buffers, --timeout 2 s,
// long beside a stall of the reader on a loaded machine) arrives whole.
func TestExportLongerThanTheTimeoutThroughTheRouter(t *testing.T) {
	const timeout = 2 * time.Second
	c, base := streamCell(t, timeout)
	defineStreamed(t, c, "ex", 15000)
	reserveStreamed(t, c, "ex", 0, 15000)

	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(64 << 10)
	fmt.Fprintf(conn, "GET /admin/campaigns/ex/skus/s/reservations HTTP/1.1\r\nHost: router\r\nAuthorization: Bearer %s\r\n\r\n", streamToken)
	started := time.Now()
	resp, err := http.ReadResponse(bufio.NewReader(pacedread.Steady(conn)), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	took := time.Since(started)
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	if err != nil || resp.StatusCode != http.StatusOK || len(lines) != 15001 || !strings.HasPrefix(lines[15000], `{"as_of_index":`) {
		t.Fatalf("export read through the router in %v (--timeout %v): status %d, %d bytes, %d lines (first %.200q), %v; want 15,000 rows and the last line",
			took, timeout, resp.StatusCode, len(body), len(lines), lines[0], err)
	}
	if took < 2*timeout {
		t.Fatalf("the export took %v to read: not longer than --timeout %v, so it proves nothing", took, timeout)
	}
	// The connection serves the reader's next request, however long after
	// the export's last write.
	time.Sleep(2 * timeout)
	fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: router\r\n\r\n")
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	next, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || next.StatusCode != http.StatusOK {
		t.Fatalf("the next request on the export's connection, 2 --timeout later: %v, %v", next, err)
	}
}

// An SSE stream through the router delivers its first event at once, and
// after a wait for events longer than --timeout, the next ones, more than
// a 4 KiB buffer at once, whole.
func TestStreamThroughTheRouterWaitsLongerThanTheTimeout(t *testing.T) {
	const timeout = time.Second // long beside a stall of a loaded machine
	c, base := streamCell(t, timeout)
	defineStreamed(t, c, "st", 5000)
	resp := openStream(t, base, "st")
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("the stream through the router: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
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
	if events(1) != 1 { // the definition
		t.Fatalf("the stream's first event: %v", lines.Err())
	}
	// The stream now waits for events longer than --timeout.
	time.Sleep(2 * timeout)
	reserveStreamed(t, c, "st", 0, 100)
	if got := events(100); got != 100 {
		t.Fatalf("the stream ended after %d of 100 events written at once after a wait of twice --timeout: %v", got, lines.Err())
	}
}

// A long poll through the router that waits longer than --timeout gets
// the event that ends its wait.
func TestLongPollThroughTheRouterWaitsLongerThanTheTimeout(t *testing.T) {
	const timeout = 200 * time.Millisecond
	c, base := streamCell(t, timeout)
	defineStreamed(t, c, "lp", 10)
	after := lastID(t, c, "lp")
	polled := make(chan string, 1)
	var took time.Duration
	go func() {
		req, _ := http.NewRequest(http.MethodGet, base+"/admin/campaigns/lp/skus/s/events?wait=60s&after="+after, nil)
		req.Header.Set("Authorization", "Bearer "+streamToken)
		started := time.Now()
		resp, err := http.DefaultClient.Do(req)
		took = time.Since(started)
		if err != nil {
			polled <- err.Error()
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		polled <- fmt.Sprintf("%d %s", resp.StatusCode, body)
	}()
	time.Sleep(2 * timeout)
	reserveStreamed(t, c, "lp", 0, 1)
	if got := <-polled; !strings.HasPrefix(got, "200 ") || strings.Count(got, `"type":"seckill.reservation.created"`) != 1 {
		t.Fatalf("a long poll through the router that waited twice --timeout: %.300s; want 200 and the one reservation", got)
	}
	if took <= timeout {
		t.Fatalf("the long poll was answered in %v: not longer than --timeout %v, so it proves nothing", took, timeout)
	}
}

// lastID is the id of the last event of campaignID's SKU "s", read from
// the cell.
func lastID(t *testing.T, c *client.Client, campaignID string) string {
	page, err := c.Feed(context.Background(), client.FeedRequest{CampaignID: campaignID, SKUID: "s"})
	if err != nil || len(page.Events) == 0 {
		t.Errorf("the cell's feed: %v, %v", page, err)
		return ""
	}
	return page.Events[len(page.Events)-1].ID
}

// A router stopped with a stream open through it ends the stream (its
// cell, writing no heartbeat, would hold it open for good) and stops.
func TestStopEndsTheStreamsThroughTheRouter(t *testing.T) {
	c, base, r, srv := streamRouter(t, 200*time.Millisecond)
	defineStreamed(t, c, "stop", 10)
	resp := openStream(t, base, "stop")
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() && !strings.HasPrefix(lines.Text(), "event: ") {
	}
	if lines.Err() != nil {
		t.Fatalf("the stream's first event: %v", lines.Err())
	}
	stopped := make(chan error, 1)
	go func() { stopped <- r.shutdown(srv) }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the router did not stop within 10 s of a stream open through it")
	}
	for lines.Scan() {
	}
}

// openStream opens the SSE stream of campaignID's SKU "s" through the
// router at base.
func openStream(t *testing.T, base, campaignID string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/admin/campaigns/"+campaignID+"/skus/s/events", nil)
	req.Header.Set("Authorization", "Bearer "+streamToken)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
