package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestQueryParameters: a route refuses a query parameter it does not
// accept, and one given twice, with 400 BAD_REQUEST naming it; its
// documented parameters work; an unknown route stays 404 whatever its
// query.
func TestQueryParameters(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	ts.define(campaign("q", "15m", map[string]int{"s": 5}))
	for _, tc := range []struct{ path, names string }{
		{"/admin/campaigns/q/skus/s/events?foo=1", `"foo" is not accepted`},
		{"/admin/campaigns/q/skus/s/events?limit=1&limit=3", `"limit" repeated`},
		{"/admin/campaigns/q/events?limit=1&x=2", `"x" is not accepted`},
		{"/admin/campaigns/q?top=1", `"top" is not accepted`},
		{"/admin/stats?top=1&top=2", `"top" repeated`},
	} {
		r := ts.admin(http.MethodGet, tc.path, nil)
		want(t, r, http.StatusBadRequest, "BAD_REQUEST")
		if !strings.Contains(r.str("detail"), tc.names) {
			t.Fatalf("%s: %v, want a detail naming %s", tc.path, r, tc.names)
		}
	}
	r := ts.get("/v1/campaigns/q/skus/s?x=1")
	want(t, r, http.StatusBadRequest, "BAD_REQUEST")
	for _, path := range []string{
		"/admin/campaigns/q/skus/s/events?limit=1&wait=0&types=seckill.reservation.created",
		"/admin/campaigns/q/events?limit=2",
		"/admin/stats?top=1&match=q&skus=q/s",
	} {
		want(t, ts.admin(http.MethodGet, path, nil), http.StatusOK, "")
	}
	want(t, ts.get("/no/such/route?x=1"), http.StatusNotFound, "NOT_FOUND")
	// The reserve route (its fast path) ignores its query.
	want(t, ts.post("/v1/campaigns/q/skus/s/reservations?x=1", `{"request_id":"r1","user_id":"u1"}`), http.StatusAccepted, "")
}

// TestQueryDetailsAreBounded: a detail quotes at most 160 bytes of what
// the client sent, in a query as in a body (docs/api.md), so a long query
// never gets a long answer.
func TestQueryDetailsAreBounded(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	ts.define(campaign("q", "15m", map[string]int{"s": 5}))
	long := strings.Repeat("x", 1000) // twice within the request line's 4 KiB
	for _, tc := range []struct{ path, reason string }{
		{"/admin/campaigns/q/skus/s/events?" + long + "=1", "BAD_REQUEST"},
		{"/admin/campaigns/q/skus/s/events?" + long + "=1&" + long + "=2", "BAD_REQUEST"},
		{"/admin/campaigns/q/skus/s/events?types=" + long, "BAD_REQUEST"},
		{"/admin/campaigns/q/skus/s/events?wait=" + long, "BAD_REQUEST"},
		{"/admin/campaigns/q/skus/s/events?after=" + long, "BAD_CURSOR"},
		{"/admin/stats?skus=" + long, "BAD_REQUEST"},
	} {
		r := ts.admin(http.MethodGet, tc.path, nil)
		want(t, r, http.StatusBadRequest, tc.reason)
		if d := r.str("detail"); len(d) > 400 || !strings.Contains(d, "xxx...") {
			t.Fatalf("%s...: a detail of %d bytes, want the input cut at 160 bytes: %.300s", tc.path[:50], len(d), d)
		}
	}
}
