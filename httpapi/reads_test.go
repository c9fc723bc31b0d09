package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/httpapi/memengine"
)

// A read that does not get its answer in time changed nothing: 503
// READ_TIMEOUT with Retry-After, never 504 RESULT_UNKNOWN; an audit whose
// recount outlasts the request is 503 AUDIT_PENDING with Retry-After.
func TestReadTimeoutIsNotResultUnknown(t *testing.T) {
	t.Parallel()
	twin := memengine.New(memengine.Config{})
	ts := startServer(t, serverOptions{
		twin:   twin,
		config: func(c *httpapi.Config) { c.RequestTimeout = 200 * time.Millisecond },
	})
	ts.define(campaign("rd", "15m", map[string]int{"s": 5}))
	r := ts.reserve("rd", "s", "r1", "u1")
	want(t, r, http.StatusAccepted, "")
	twin.SetHooks(memengine.Hooks{Before: func(ctx context.Context, c memengine.Call) error {
		switch c.Kind {
		case memengine.KindGet, memengine.KindLookup, memengine.KindRefunds:
			<-ctx.Done()
			return ctx.Err()
		case memengine.KindAudit:
			return actors.ErrAuditPending
		}
		return nil
	}})
	for _, path := range []string{
		"/v1/reservations/" + r.str("reservation_id"),
		"/v1/campaigns/rd/skus/s/requests/r1",
		"/admin/campaigns/rd/skus/s/refunds",
	} {
		got := ts.get(path)
		if strings.HasPrefix(path, "/admin/") {
			got = ts.admin(http.MethodGet, path, nil)
		}
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
