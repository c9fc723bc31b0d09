package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/cells"
)

// silentCell accepts connections, reads what is sent and never answers
// (a cell paused, or stuck, after the request reached it). got receives
// each connection's first bytes.
func silentCell(t *testing.T) (addr string, got chan string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got = make(chan string, 16)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() {
				b := make([]byte, 4096)
				n, _ := c.Read(b)
				got <- string(b[:n])
				io.Copy(io.Discard, c) // read on, answer never
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String(), got
}

// refusedAddr is a loopback address nobody listens on: a connection to it
// is refused.
func refusedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestUnansweredCommandIsResultUnknown: a reserve, a payment and a batch
// the router delivered to a cell that never answers get 504
// RESULT_UNKNOWN with the URL their result is looked up at (the reserve's
// request_id, the reservation; each batch item's request_id), not 503: the
// cell may have applied them. A cell the router cannot connect to gets
// 503 CELL_UNAVAILABLE with Retry-After (nothing was delivered), and so
// does a read (it changes nothing).
func TestUnansweredCommandIsResultUnknown(t *testing.T) {
	silent, got := silentCell(t)
	refused := refusedAddr(t)
	m, err := cells.EvenMap(1, []string{"c1", "c2"})
	if err != nil {
		t.Fatal(err)
	}
	pub := cells.Published{Definition: sku.Definition{CampaignID: "demo", SKUID: "sku-1"}, Map: m}
	r, err := newRouter(options{cells: "c1=" + silent + ",c2=" + refused, timeout: 300 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.routes.Store(cells.NewRoutes([]cells.Published{pub}))
	userOf := map[string]string{}
	for u := 0; len(userOf) < 2; u++ {
		user := fmt.Sprintf("u%d", u)
		if c := pub.CellOf(user); userOf[c] == "" {
			userOf[c] = user
		}
	}
	type answer struct {
		status     int
		retryAfter string
		body       map[string]any
	}
	send := func(method, path, body string) answer {
		t.Helper()
		var c fasthttp.RequestCtx
		c.Request.Header.SetMethod(method)
		c.Request.SetRequestURI(path)
		c.Request.SetHost("router")
		c.Request.SetBodyString(body)
		r.handle(&c)
		a := answer{status: c.Response.StatusCode(), retryAfter: string(c.Response.Header.Peek("Retry-After"))}
		if err := json.Unmarshal(c.Response.Body(), &a.body); err != nil {
			t.Fatalf("%s %s: %d %q: %v", method, path, a.status, c.Response.Body(), err)
		}
		return a
	}
	unknown := func(what string, a answer, statusURL string) {
		t.Helper()
		if a.status != http.StatusGatewayTimeout || a.body["error"] != "RESULT_UNKNOWN" || a.body["status_url"] != statusURL ||
			!strings.Contains(fmt.Sprint(a.body["detail"]), "cell c1 did not answer") {
			t.Fatalf("%s: %+v, want 504 RESULT_UNKNOWN with status_url %s", what, a, statusURL)
		}
	}
	unavailable := func(what string, a answer) {
		t.Helper()
		if a.status != http.StatusServiceUnavailable || a.retryAfter != "1" || a.body["error"] != "CELL_UNAVAILABLE" {
			t.Fatalf("%s: %+v, want 503 CELL_UNAVAILABLE with Retry-After 1", what, a)
		}
	}
	delivered := func(what string) {
		t.Helper()
		select {
		case b := <-got:
			if !strings.Contains(b, "POST /") && !strings.Contains(b, "GET /") {
				t.Fatalf("%s: the silent cell read %q", what, b)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s never reached the silent cell", what)
		}
	}

	unknown("a reserve the silent cell received",
		send("POST", "/v1/campaigns/demo/skus/sku-1/reservations", `{"request_id":"r1","user_id":"`+userOf["c1"]+`"}`),
		"/v1/campaigns/demo/skus/sku-1/requests/r1")
	delivered("the reserve")
	id := sku.FormatCellReservationID("demo", "sku-1", "c1", 7, [16]byte{1})
	unknown("a payment the silent cell received", send("POST", "/v1/reservations/"+id+"/payment", `{"payment_id":"p1","amount":1}`),
		"/v1/reservations/"+id)
	delivered("the payment")
	unavailable("a read of the silent cell", send("GET", "/v1/reservations/"+id, ""))
	delivered("the read")
	unavailable("a reserve at a cell that refuses connections",
		send("POST", "/v1/campaigns/demo/skus/sku-1/reservations", `{"request_id":"r2","user_id":"`+userOf["c2"]+`"}`))

	// A batch of both cells' users: the silent cell's item is unknown,
	// the refused cell's unavailable.
	batch := send("POST", "/v1/campaigns/demo/skus/sku-1/reservations:batch",
		`{"items":[{"request_id":"b1","user_id":"`+userOf["c2"]+`"},{"request_id":"b2","user_id":"`+userOf["c1"]+`"}]}`)
	delivered("the batch's sub-batch")
	results, _ := batch.body["results"].([]any)
	if batch.status != http.StatusOK || len(results) != 2 {
		t.Fatalf("batch: %+v", batch)
	}
	item := func(i int) answer {
		res := results[i].(map[string]any)
		a := answer{status: int(res["status"].(float64)), body: res["body"].(map[string]any)}
		if ra, ok := res["retry_after"]; ok {
			a.retryAfter = fmt.Sprint(ra)
		}
		return a
	}
	unavailable("the refused cell's batch item", item(0))
	unknown("the silent cell's batch item", item(1), "/v1/campaigns/demo/skus/sku-1/requests/b2")
	// All of a batch at the silent cell: sent whole, answered per item.
	whole := send("POST", "/v1/campaigns/demo/skus/sku-1/reservations:batch", `{"items":[{"request_id":"b3","user_id":"`+userOf["c1"]+`"}]}`)
	delivered("the whole batch")
	if results, _ = whole.body["results"].([]any); whole.status != http.StatusOK || len(results) != 1 {
		t.Fatalf("whole batch: %+v", whole)
	}
	unknown("a whole batch's item", item(0), "/v1/campaigns/demo/skus/sku-1/requests/b3")
}

// TestWrongCellGetsTheCellsAddress: a 421 WRONG_CELL a cell answers
// through the router (a map the router does not hold yet) names the cell
// and, when the cell did not, gets the address the router sends that
// cell to; an address the cell gave is kept.
func TestWrongCellGetsTheCellsAddress(t *testing.T) {
	cell := func(body string) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusMisdirectedRequest)
			io.WriteString(w, body)
		}))
		t.Cleanup(s.Close)
		return strings.TrimPrefix(s.URL, "http://")
	}
	c1 := cell(`{"error":"WRONG_CELL","detail":"the user belongs to another cell: user u of demo/s is cell c2's","cell":"c2"}`)
	c2 := cell(`{"error":"WRONG_CELL","cell":"c1","address":"http://c1.example"}`)
	r, err := newRouter(options{cells: "c1=" + c1 + ",c2=" + c2, timeout: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := cells.EvenMap(1, []string{"c1", "c2"})
	if err != nil {
		t.Fatal(err)
	}
	r.routes.Store(cells.NewRoutes([]cells.Published{{Definition: sku.Definition{CampaignID: "demo", SKUID: "s"}, Map: m}}))
	for _, tc := range []struct{ cell, wantCell, wantAddr string }{{"c1", "c2", "http://" + c2}, {"c2", "c1", "http://c1.example"}} {
		var c fasthttp.RequestCtx
		c.Request.Header.SetMethod("GET")
		c.Request.SetRequestURI("/v1/campaigns/demo/skus/s")
		c.Request.SetHost("router")
		r.forward(&c, tc.cell)
		var body map[string]any
		if err := json.Unmarshal(c.Response.Body(), &body); err != nil || c.Response.StatusCode() != 421 ||
			body["error"] != "WRONG_CELL" || body["cell"] != tc.wantCell || body["address"] != tc.wantAddr {
			t.Fatalf("via %s: %d %s (%v), want cell %s at %s", tc.cell, c.Response.StatusCode(), c.Response.Body(), err, tc.wantCell, tc.wantAddr)
		}
	}
}
