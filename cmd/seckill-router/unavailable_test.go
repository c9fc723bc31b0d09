package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/cells"
)

// TestUnavailableIsRetriedWithinTheTimeout: a cell's primary that has just
// taken over answers 503 UNAVAILABLE with Retry-After while it defines its
// campaigns (nothing applied). The router sends the request again after
// that wait when the retry has time left within --timeout, and the buyer
// gets the primary's real answer; with no time left for it the 503 and its
// Retry-After reach the buyer as sent. Other 503s (PAUSED: an operator's
// pause) are passed on at once.
func TestUnavailableIsRetriedWithinTheTimeout(t *testing.T) {
	var calls atomic.Int64
	var starting atomic.Int64 // how many requests the primary still refuses
	var reason atomic.Value
	reason.Store("UNAVAILABLE")
	cell := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if starting.Add(-1) >= 0 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, `{"error":%q,"detail":"the primary of c1 is defining its campaigns: retry in a moment"}`, reason.Load())
			return
		}
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprint(w, `{"state":"PENDING_PAYMENT"}`)
	}))
	t.Cleanup(cell.Close)
	m, err := cells.EvenMap(1, []string{"c1"})
	if err != nil {
		t.Fatal(err)
	}
	newR := func(timeout time.Duration) *router {
		r, err := newRouter(options{cells: "c1=" + strings.TrimPrefix(cell.URL, "http://"), timeout: timeout}, nil)
		if err != nil {
			t.Fatal(err)
		}
		r.routes.Store(cells.NewRoutes([]cells.Published{{Definition: sku.Definition{CampaignID: "demo", SKUID: "s"}, Map: m}}))
		return r
	}
	reserve := func(r *router) (int, string, map[string]any) { return reserveThrough(t, r, "s") }

	// Time for a retry after Retry-After: the buyer never sees the 503.
	starting.Store(1)
	if status, _, body := reserve(newR(10 * time.Second)); status != http.StatusAccepted || calls.Load() != 2 {
		t.Fatalf("a starting primary, time to retry: %d %v after %d calls, want 202 after 2", status, body, calls.Load())
	}
	// No time for one: the 503 as the primary sent it.
	calls.Store(0)
	starting.Store(1)
	if status, after, body := reserve(newR(time.Second)); status != http.StatusServiceUnavailable ||
		body["error"] != "UNAVAILABLE" || after != "1" || calls.Load() != 1 {
		t.Fatalf("a starting primary, no time to retry: %d %v Retry-After %q after %d calls, want 503 UNAVAILABLE, Retry-After 1, 1 call",
			status, body, after, calls.Load())
	}
	// A pause is the operator's: passed on at once.
	calls.Store(0)
	starting.Store(1)
	reason.Store("PAUSED")
	if status, _, body := reserve(newR(10 * time.Second)); status != http.StatusServiceUnavailable ||
		body["error"] != "PAUSED" || calls.Load() != 1 {
		t.Fatalf("a paused SKU: %d %v after %d calls, want 503 PAUSED after 1", status, body, calls.Load())
	}
}
