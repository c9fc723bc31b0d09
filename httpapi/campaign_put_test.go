package httpapi_test

import (
	"net/http"
	"testing"
)

// A PUT whose payment_window is above a day is 400 BAD_REQUEST naming the
// field and its range, and defines nothing; a day is accepted.
func TestCampaignPaymentWindowBound(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	r := ts.admin(http.MethodPut, "/admin/campaigns/pw", campaign("pw", "25h", map[string]int{"s": 5}))
	want(t, r, http.StatusBadRequest, "BAD_REQUEST")
	if d := r.str("detail"); d != `payment_window: must be a duration from "1ms" to "24h", such as "15m" or "90s"` {
		t.Fatalf("detail %q", d)
	}
	want(t, ts.admin(http.MethodGet, "/admin/campaigns/pw", nil), http.StatusNotFound, "NOT_FOUND")
	want(t, ts.admin(http.MethodPut, "/admin/campaigns/pw", campaign("pw", "24h", map[string]int{"s": 5})), http.StatusCreated, "")
}
