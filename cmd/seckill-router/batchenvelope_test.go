package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/cells"
)

// TestBatchEnvelopesTheRouterCannotSplit: a batch reserve of a celled SKU
// whose body is one object without "items" goes whole to the first cell,
// whose 400 the router answers; a cell that answers a sub-batch 200
// without "results" gives its items that answer. Either, read without
// care (fastjson's Array of a missing key), panics the router and drops
// every buyer's connection: the router must answer, and answer the next
// request too.
func TestBatchEnvelopesTheRouterCannotSplit(t *testing.T) {
	cell := func(status int, body string) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			io.WriteString(w, body)
		}))
		t.Cleanup(s.Close)
		return strings.TrimPrefix(s.URL, "http://")
	}
	m, err := cells.EvenMap(1, []string{"c1", "c2"})
	if err != nil {
		t.Fatal(err)
	}
	pub := cells.Published{Definition: sku.Definition{CampaignID: "demo", SKUID: "sku-1"}, Map: m}
	r, err := newRouter(options{cells: "c1=" + cell(400, `{"error":"BAD_REQUEST","detail":"unknown field \"a\""}`) +
		",c2=" + cell(200, `{"ok":true}`), timeout: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.routes.Store(cells.NewRoutes([]cells.Published{pub}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := r.server()
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown() })
	base := "http://" + ln.Addr().String()
	post := func(body string) (int, map[string]any) {
		t.Helper()
		resp, err := http.Post(base+"/v1/campaigns/demo/skus/sku-1/reservations:batch", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("batch %s: %v", body, err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatalf("batch %s: %d, %v", body, resp.StatusCode, err)
		}
		return resp.StatusCode, out
	}
	for _, body := range []string{`{"a":1}`, `{"ITEMS":[]}`} {
		if status, out := post(body); status != http.StatusBadRequest || out["error"] != "BAD_REQUEST" {
			t.Fatalf("batch %s: %d %v, want the first cell's 400", body, status, out)
		}
	}
	userOf := map[string]string{}
	for u := 0; len(userOf) < 2; u++ {
		user := fmt.Sprintf("u%d", u)
		if c := pub.CellOf(user); userOf[c] == "" {
			userOf[c] = user
		}
	}
	status, out := post(`{"items":[{"request_id":"b1","user_id":"` + userOf["c1"] + `"},{"request_id":"b2","user_id":"` + userOf["c2"] + `"}]}`)
	results, _ := out["results"].([]any)
	if status != http.StatusOK || len(results) != 2 {
		t.Fatalf("a batch of both cells: %d %v", status, out)
	}
	if second, _ := results[1].(map[string]any); second["status"] != float64(200) || fmt.Sprint(second["body"]) != "map[ok:true]" {
		t.Fatalf("the item of the cell that answered 200 without results: %v", results[1])
	}
}
