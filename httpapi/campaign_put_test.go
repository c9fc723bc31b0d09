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

// Durations come back in one canonical form, whatever the PUT spelled:
// Go's duration text without zero units, to the millisecond ("1.5h" and
// "90m" are "1h30m", "5400s" too, "0.5h" is "30m"). The definition keeps
// milliseconds, not the text, so two spellings of a duration are one
// definition: a PUT of another spelling, or of the answer itself, is the
// same definition (200, not 409), and answers the same bytes.
func TestCampaignDurationsRoundTrip(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	body := campaign("dur", "1.5h", map[string]int{"s": 5})
	body["payment_window_high_risk"] = "0.5h"
	body["entry_pass"] = map[string]any{"required": false, "lead": "90m", "ttl": "5400.0004s"}
	first := ts.admin(http.MethodPut, "/admin/campaigns/dur", body)
	want(t, first, http.StatusCreated, "")
	skus, _ := first.body["skus"].([]any)
	if len(skus) != 1 {
		t.Fatalf("answer %v", first)
	}
	s := skus[0].(map[string]any)
	pass, _ := s["entry_pass"].(map[string]any)
	if s["payment_window"] != "1h30m" || s["payment_window_high_risk"] != "30m" || pass["lead"] != "1h30m" || pass["ttl"] != "1h30m" {
		t.Fatalf("durations of the answer: %v, want 1h30m, 30m, 1h30m, 1h30m", first)
	}
	for _, spelling := range []map[string]any{
		{"payment_window": "90m", "payment_window_high_risk": "1800s", "entry_pass": map[string]any{"required": false, "lead": "1.5h", "ttl": "90m"}},
		{"payment_window": s["payment_window"], "payment_window_high_risk": s["payment_window_high_risk"], "entry_pass": pass},
	} {
		for k, v := range spelling {
			body[k] = v
		}
		again := ts.admin(http.MethodPut, "/admin/campaigns/dur", body)
		want(t, again, http.StatusOK, "")
		if string(again.raw) != string(first.raw) {
			t.Fatalf("PUT of %v: %s, want the same bytes as %s", spelling, again.raw, first.raw)
		}
	}
	if got := ts.admin(http.MethodGet, "/admin/campaigns/dur", nil); string(got.raw) != string(first.raw) {
		t.Fatalf("GET: %s, want the PUT's answer %s", got.raw, first.raw)
	}
}
