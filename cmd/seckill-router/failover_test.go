package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestRouterWaitsOutAFailover: a reserve sent while its replica set's
// primary in the router's table is gone (its address refuses connections,
// its key not yet expired) is not answered 503 at once: it waits for the
// set's next primary and is served by it within the router's timeout.
// Beyond maxFailoverWaits a request is answered 503 CELL_UNAVAILABLE at
// once (and one that found no primary for half the timeout:
// TestRouterFollowsThePrimary).
func TestRouterWaitsOutAFailover(t *testing.T) {
	next := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"served_by":"next"}`)
	}))
	t.Cleanup(next.Close)
	// A timeout long enough for a loaded machine's etcd to hand the key
	// over well within its half.
	s := newSetRouter(t, map[string]string{"gone": "http://" + refusedAddr(t), "next": next.URL}, 20*time.Second)
	s.r.failoverWaits = make(chan struct{}, 1) // a bound of one, to reach it
	send := func() (int, map[string]any) {
		status, _, body := reserveThrough(t, s.r, "sku-1")
		return status, body
	}
	waiting := func(n int) {
		t.Helper()
		for len(s.r.failoverWaits) != n {
			if s.ctx.Err() != nil {
				t.Fatalf("%d requests wait for a primary, want %d", len(s.r.failoverWaits), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	held := s.acquire("gone")
	first := s.reserveLater()
	waiting(1)
	// The bound is reached: a second request is not held.
	if status, body := send(); status != http.StatusServiceUnavailable || body["error"] != "CELL_UNAVAILABLE" {
		t.Fatalf("beyond the bound of waiting requests: %d %v, want 503 CELL_UNAVAILABLE", status, body)
	}
	// The failover: the gone primary's key goes, the next one takes it.
	s.handOver("gone", held, "next")
	s.servedByNext(first, "the request that waited out the failover")
	waiting(0)
}

// TestRouterWaitsOutAPrimaryThatNoLongerLeads: the replica the router's
// table names as primary answers 421 NOT_PRIMARY naming no primary (it
// was demoted, as every primary is while etcd does not answer, and no
// replica leads yet): nothing was applied, so the request waits for the
// set's next primary as one sent while the leader key is free does, and is
// served by it. A buyer is never answered the replica's 421 (a router's
// client has no replica to send it to): when no primary leads within half
// the timeout, 503 CELL_UNAVAILABLE with Retry-After.
func TestRouterWaitsOutAPrimaryThatNoLongerLeads(t *testing.T) {
	demoted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusMisdirectedRequest)
		fmt.Fprint(w, `{"error":"NOT_PRIMARY","detail":"this replica of rs1 is not its primary, and no primary is known yet: retry","replica_set":"rs1"}`)
	}))
	t.Cleanup(demoted.Close)
	next := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"served_by":"next"}`)
	}))
	t.Cleanup(next.Close)
	s := newSetRouter(t, map[string]string{"demoted": demoted.URL, "next": next.URL}, 600*time.Millisecond)
	held := s.acquire("demoted")

	status, retry, body := reserveThrough(t, s.r, "sku-1")
	if status != http.StatusServiceUnavailable || body["error"] != "CELL_UNAVAILABLE" || retry != "1" {
		t.Fatalf("no replica leads for the whole timeout: %d (Retry-After %q) %v, want 503 CELL_UNAVAILABLE with Retry-After 1", status, retry, body)
	}

	// A long timeout: the request waits while the key is handed over.
	s.r.timeout = 20 * time.Second
	first := s.reserveLater()
	for len(s.r.failoverWaits) != 1 {
		if s.ctx.Err() != nil {
			t.Fatal("the request answered NOT_PRIMARY without a primary never waited for the next one")
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.handOver("demoted", held, "next")
	s.servedByNext(first, "the request that waited")
}
