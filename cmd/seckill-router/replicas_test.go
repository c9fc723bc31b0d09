package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The router sends a replica set's requests to its primary as etcd names
// it (a watch of the leader and member keys), follows a standby's 421
// NOT_PRIMARY to the primary it names once, answers 503 CELL_UNAVAILABLE
// when the set had no primary for half its timeout (nothing delivered), and 504
// RESULT_UNKNOWN with the lookup URL for a reserve its primary read and
// never answered.
func TestRouterFollowsThePrimary(t *testing.T) {
	// a serves; b is its standby and answers NOT_PRIMARY naming a.
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"served_by":"a"}`)
	}))
	t.Cleanup(a.Close)
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", a.URL+r.URL.Path)
		w.WriteHeader(http.StatusMisdirectedRequest)
		fmt.Fprintf(w, `{"error":"NOT_PRIMARY","replica_set":"rs1","primary":"a","address":%q}`, a.URL)
	}))
	t.Cleanup(b.Close)
	silent, _ := silentCell(t)
	s := newSetRouter(t, map[string]string{"a": a.URL, "b": b.URL, "c": "http://" + silent}, 300*time.Millisecond)
	send := func() (int, map[string]any) {
		status, _, body := reserveThrough(t, s.r, "sku-1")
		return status, body
	}

	// Members but no leader: between primaries, nothing is sent (after
	// half the timeout of waiting for a primary).
	if status, body := send(); status != http.StatusServiceUnavailable || body["error"] != "CELL_UNAVAILABLE" {
		t.Fatalf("no primary: %d %v", status, body)
	}

	// b holds the key (the router's table says b; b itself says a leads,
	// as a standby whose view is ahead of the router's would): the 421 is
	// followed to a once.
	hb := s.acquire("b")
	if status, body := send(); status != http.StatusCreated || body["served_by"] != "a" {
		t.Fatalf("via b's NOT_PRIMARY: %d %v", status, body)
	}
	if err := s.coords["b"].Release(s.ctx, hb, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	ha := s.acquire("a")
	if status, body := send(); status != http.StatusCreated || body["served_by"] != "a" {
		t.Fatalf("to a: %d %v", status, body)
	}

	// c leads and dies with the request read: RESULT_UNKNOWN with the
	// request's lookup URL.
	if err := s.coords["a"].Release(s.ctx, ha, []string{"c"}); err != nil {
		t.Fatal(err)
	}
	s.acquire("c")
	status, body := send()
	if status != http.StatusGatewayTimeout || body["error"] != "RESULT_UNKNOWN" ||
		!strings.HasSuffix(fmt.Sprint(body["status_url"]), "/v1/campaigns/demo/skus/sku-1/requests/r1") {
		t.Fatalf("a primary that never answered: %d %v", status, body)
	}
}

// A 421 NOT_PRIMARY answered late sends the request on to the primary it
// names within what is left of the request's --timeout, not within a
// whole --timeout more: a replica that took most of the time to refuse,
// and a primary that then does not answer, get the buyer its 504
// RESULT_UNKNOWN at the router's timeout.
func TestNotPrimaryIsFollowedWithinTheTimeout(t *testing.T) {
	silent, got := silentCell(t)
	const timeout = time.Second
	late := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(timeout * 8 / 10) // a standby slow to refuse
		w.WriteHeader(http.StatusMisdirectedRequest)
		fmt.Fprintf(w, `{"error":"NOT_PRIMARY","replica_set":"rs1","primary":"p","address":"http://%s"}`, silent)
	}))
	t.Cleanup(late.Close)
	r, err := newRouter(options{cells: "rs1=" + late.URL, timeout: timeout}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.local.known.Add("demo", localEntry{cell: "rs1"}) // no etcd: campaign demo is rs1's
	start := time.Now()
	status, _, body := reserveThrough(t, r, "sku-1")
	took := time.Since(start)
	if status != http.StatusGatewayTimeout || body["error"] != "RESULT_UNKNOWN" {
		t.Fatalf("%d %v, want 504 RESULT_UNKNOWN (the primary read it and never answered)", status, body)
	}
	if first := <-got; !strings.HasPrefix(first, "POST /v1/campaigns/demo/skus/sku-1/reservations") {
		t.Fatalf("the primary named read %q, want the reserve", first)
	}
	if took > timeout*14/10 {
		t.Fatalf("answered after %v with --timeout %v: the 421 was followed with a whole timeout more", took, timeout)
	}
}
