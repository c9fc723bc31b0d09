package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/cells"
	"github.com/seckill/seckill/httpapi"
)

// TestRouterLimitsAnswerJSON: a request the router cannot read is answered
// as a cell answers it, in JSON with its reason: a body beyond the cells'
// limit 413 BODY_TOO_LARGE (naming the limit), an over-long header 431
// HEADER_TOO_LARGE, read by the client before the connection closes
// (never a reset while the client still sends); a batch reserve's body may be larger than a plain
// request's (it reaches the cell).
func TestRouterLimitsAnswerJSON(t *testing.T) {
	cell := refusedAddr(t)
	r, err := newRouter(options{cells: "c1=" + cell, timeout: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := cells.EvenMap(1, []string{"c1"})
	if err != nil {
		t.Fatal(err)
	}
	r.routes.Store(cells.NewRoutes([]cells.Published{{Definition: sku.Definition{CampaignID: "demo", SKUID: "s"}, Map: m}}))
	base := "http://" + serveRouter(t, r)
	send := func(method, path string, header http.Header, body string) (int, string, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return resp.StatusCode, resp.Header.Get("Content-Type"), m
	}
	big := strings.Repeat("x", 5<<20)
	if code, ct, m := send("POST", "/v1/campaigns/demo/skus/s/reservations", nil, big); code != 413 || ct != "application/json" ||
		m["error"] != "BODY_TOO_LARGE" || !strings.Contains(m["detail"].(string), "4096 bytes") {
		t.Fatalf("a 5 MiB body: %d %s %v, want 413 BODY_TOO_LARGE in JSON naming 4096 bytes", code, ct, m)
	}
	if code, ct, m := send("GET", "/v1/campaigns/demo/skus/s", http.Header{"X-Long": {strings.Repeat("y", 16<<10)}}, ""); code != 431 ||
		ct != "application/json" || m["error"] != "HEADER_TOO_LARGE" {
		t.Fatalf("a 16 KiB header: %d %s %v, want 431 HEADER_TOO_LARGE in JSON", code, ct, m)
	}
	// A 100 KiB batch is read and forwarded (the cell refuses the connection: 503).
	if code, _, m := send("POST", "/v1/campaigns/demo/skus/s/reservations:batch", nil, `{"items":[`+strings.Repeat(" ", 100<<10)+`]}`); code != 503 || m["error"] != "CELL_UNAVAILABLE" {
		t.Fatalf("a 100 KiB batch: %d %v, want it forwarded (503 CELL_UNAVAILABLE from a refused cell)", code, m)
	}
}

// TestRouterRawRefusals: what a cell answers before reading a body, the
// router answers the same: a body announced beyond the limit with
// "Expect: 100-continue" is 413 from its header alone, with no 100
// Continue inviting the body first, and a transfer coding other than
// chunked is 501 NOT_IMPLEMENTED, not a malformed request.
func TestRouterRawRefusals(t *testing.T) {
	r, err := newRouter(options{cells: "c1=" + refusedAddr(t), timeout: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := serveRouter(t, r)
	raw := func(request string) string {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, request); err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(c)
		return string(b)
	}
	const path = "/v1/campaigns/demo/skus/s/reservations"
	got := raw("POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n")
	if !strings.HasPrefix(got, "HTTP/1.1 413 ") || !strings.Contains(got, `"error":"BODY_TOO_LARGE"`) {
		t.Errorf("a body of 100000 bytes announced with Expect: 100-continue: %q, want 413 BODY_TOO_LARGE first", got)
	}
	got = raw("POST " + path + " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
	if !strings.HasPrefix(got, "HTTP/1.1 501 ") || !strings.Contains(got, `"error":"NOT_IMPLEMENTED"`) {
		t.Errorf("Transfer-Encoding: gzip, chunked: %q, want 501 NOT_IMPLEMENTED", got)
	}
}

// serveRouter serves r as main does, on a loopback port, until the test
// ends, and returns its address.
func serveRouter(t *testing.T, r *router) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := r.server()
	go srv.Serve(httpapi.LingeringListener(ln, srv.ReadTimeout))
	t.Cleanup(func() { srv.Shutdown() })
	return ln.Addr().String()
}
