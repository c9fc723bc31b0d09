package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/httpapi"
)

// A reserve the engine refuses busy (actors.ErrBusy: the SKU's inbox
// full, or a campaign-scope reserve whose wait for its user's reserve on
// another SKU outlasted the request) decided nothing: 429 QUEUE_FULL with
// the Retry-After every QUEUE_FULL carries, as admission's own refusal
// does (it had none), and its retry is served.
func TestEngineBusyIsQueueFullWithRetryAfter(t *testing.T) {
	t.Parallel()
	faults := &faultEngine{}
	ts := startServer(t, serverOptions{faults: faults, config: func(c *httpapi.Config) {
		c.MaxQueueWait = 2 * time.Second
	}})
	ts.define(campaign("busy", "15m", map[string]int{"s": 10}))
	faults.setHooks(hooks{before: func(_ context.Context, c engineCall) error {
		if c.kind == kindReserve && c.requestID == "r1" {
			return fmt.Errorf("reserve: %w", actors.ErrBusy)
		}
		return nil
	}})
	r := ts.reserve("busy", "s", "r1", "u1")
	want(t, r, http.StatusTooManyRequests, "QUEUE_FULL")
	if got := r.header.Get("Retry-After"); got != "2" {
		t.Errorf("429 QUEUE_FULL of a busy engine: Retry-After %q, want %q (max_queue_wait)", got, "2")
	}
	faults.setHooks(hooks{})
	want(t, ts.reserve("busy", "s", "r1", "u1"), http.StatusAccepted, "")
}

// The feed's reads of the engine answer as every route's: a page whose
// reservation look-ups find the SKU's inbox full (actors.ErrBusy), on a
// SKU's feed or a campaign's, and an export whose state the engine refuses
// busy, are 429 QUEUE_FULL with Retry-After; a look-up that outlasted its
// time changed nothing: 503 READ_TIMEOUT with Retry-After, not 504
// RESULT_UNKNOWN. Served again once the engine is not busy.
func TestFeedEngineBusyIsQueueFullWithRetryAfter(t *testing.T) {
	t.Parallel()
	faults := &faultEngine{}
	ts := startServer(t, serverOptions{faults: faults, config: func(c *httpapi.Config) {
		c.MaxQueueWait = 2 * time.Second
	}})
	ts.define(campaign("fbusy", "15m", map[string]int{"s": 10}))
	r := ts.reserve("fbusy", "s", "r1", "u1")
	want(t, r, http.StatusAccepted, "")
	// A cancel's CLOSED event carries the reservation's fields: its page
	// looks the reservation up.
	want(t, ts.post("/v1/reservations/"+r.str("reservation_id")+"/cancel", nil), http.StatusOK, "")

	pages := []string{feedPath("fbusy", "s", ""), "/admin/campaigns/fbusy/events"}
	export := "/admin/campaigns/fbusy/skus/s/reservations"
	failing := func(kind callKind, err error) {
		faults.setHooks(hooks{before: func(_ context.Context, c engineCall) error {
			if c.kind == kind {
				return fmt.Errorf("feed read: %w", err)
			}
			return nil
		}})
	}
	check := func(path string, status int, reason, retryAfter string) {
		t.Helper()
		got := ts.admin(http.MethodGet, path, nil)
		want(t, got, status, reason)
		if h := got.header.Get("Retry-After"); h != retryAfter {
			t.Errorf("GET %s: %d %s with Retry-After %q, want %q", path, status, reason, h, retryAfter)
		}
	}

	failing(kindFeedLookup, actors.ErrBusy)
	for _, path := range pages {
		check(path, http.StatusTooManyRequests, "QUEUE_FULL", "2") // max_queue_wait
	}
	failing(kindExportState, actors.ErrBusy)
	check(export, http.StatusTooManyRequests, "QUEUE_FULL", "2")
	failing(kindFeedLookup, context.DeadlineExceeded)
	for _, path := range pages {
		check(path, http.StatusServiceUnavailable, "READ_TIMEOUT", "1")
	}

	faults.setHooks(hooks{})
	for _, path := range append(pages, export) {
		want(t, ts.admin(http.MethodGet, path, nil), http.StatusOK, "")
	}
}
