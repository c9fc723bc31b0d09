package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/httpapi"
)

// A read that does not get its answer in time changed nothing: 503
// READ_TIMEOUT with Retry-After, never 504 RESULT_UNKNOWN; an audit whose
// recount outlasts the request is 503 AUDIT_PENDING with Retry-After.
func TestReadTimeoutIsNotResultUnknown(t *testing.T) {
	t.Parallel()
	faults := &faultEngine{}
	ts := startServer(t, serverOptions{
		faults: faults,
		config: func(c *httpapi.Config) { c.RequestTimeout = 2 * time.Second },
	})
	ts.define(campaign("rd", "15m", map[string]int{"s": 5}))
	r := ts.reserve("rd", "s", "r1", "u1")
	want(t, r, http.StatusAccepted, "")
	faults.setHooks(hooks{before: func(ctx context.Context, c engineCall) error {
		switch c.kind {
		case kindGet, kindLookup, kindRefunds:
			<-ctx.Done()
			return ctx.Err()
		case kindAudit:
			return actors.ErrAuditPending
		}
		return nil
	}})
	paths := []string{
		"/v1/reservations/" + r.str("reservation_id"),
		"/v1/campaigns/rd/skus/s/requests/r1",
		"/admin/campaigns/rd/skus/s/refunds",
	}
	answers := make([]chan response, len(paths))
	for i, path := range paths { // at once: each waits out the request timeout
		answers[i] = make(chan response, 1)
		go func() {
			header := map[string]string{}
			if strings.HasPrefix(path, "/admin/") {
				header["Authorization"] = "Bearer " + testToken
			}
			got, err := try(http.MethodGet, ts.base+path, nil, header)
			if err != nil {
				t.Error(err)
			}
			answers[i] <- got
		}()
	}
	for i, path := range paths {
		got := <-answers[i]
		want(t, got, http.StatusServiceUnavailable, "READ_TIMEOUT")
		if got.header.Get("Retry-After") == "" || got.str("status_url") != "" {
			t.Errorf("%s: Retry-After %q, body %v", path, got.header.Get("Retry-After"), got)
		}
	}
	got := ts.admin(http.MethodGet, "/admin/campaigns/rd/skus/s/audit", nil)
	want(t, got, http.StatusServiceUnavailable, "AUDIT_PENDING")
	if got.header.Get("Retry-After") == "" {
		t.Errorf("audit pending without Retry-After")
	}
}
