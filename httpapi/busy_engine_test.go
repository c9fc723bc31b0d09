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
