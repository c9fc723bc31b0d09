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

// An error in one SKU of a PUT names that SKU by its index in skus and
// its sku_id (when it is a string), and the field; an error of the
// campaign's own fields names no SKU. Each is 400 BAD_REQUEST and defines
// nothing.
func TestCampaignSKUErrorsNameTheSKU(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	const head = `{"campaign_id":"se","start_at":"2030-01-01T00:00:00Z","end_at":"2030-01-02T00:00:00Z","skus":[{"sku_id":"a","sale_limit":1},{"sku_id":"b","sale_limit":2},`
	for third, detail := range map[string]string{
		`{"sku_id":"c3","sale_limit":"ten"}]}`:                                 `skus[2].sale_limit (sku_id "c3"): must be an integer from 1 to 1073741824`,
		`{"sale_limit":-1,"sku_id":"c3"}]}`:                                    `skus[2].sale_limit (sku_id "c3"): must be an integer from 1 to 1073741824`,
		`{"sku_id":"c3","sale_limit":0}]}`:                                     `skus[2].sale_limit (sku_id "c3"): must be an integer from 1 to 1073741824`,
		`{"sku_id":"c3","sale_limit":1.5}]}`:                                   `skus[2].sale_limit (sku_id "c3"): must be an integer from 1 to 1073741824`,
		`{"sku_id":3,"sale_limit":1}]}`:                                        `skus[2].sku_id: must be a string`,
		`{"sku_id":"c 3","sale_limit":1}]}`:                                    `skus[2] (sku_id "c 3"): invalid definition: sku_id "c 3" must be 1-64 characters of [A-Za-z0-9._:-], not "." or ".."`,
		`{"sku_id":"a","sale_limit":1}]}`:                                      `skus[2]: sku_id "a" appears twice`,
		`{"sku_id":"c3","sale_limit":1,"beacon":{"source":"x","round":"r"}}]}`: `skus[2].beacon.round (sku_id "c3"): must be an integer from 1 to 1099511627776`,
		`{"sku_id":"c3","sale_limit":1,"allocation":"lottery"}]}`:              `skus[2] (sku_id "c3"): a lottery SKU needs entries_open_at, entries_close_at and beacon`,
		`{"sku_id":"c3","sale_limit":1,"waitlist":5}]}`:                        `skus[2] (sku_id "c3"): the lottery fields need "allocation":"lottery"`,
	} {
		r := ts.admin(http.MethodPut, "/admin/campaigns/se", head+third)
		want(t, r, http.StatusBadRequest, "BAD_REQUEST")
		if r.str("detail") != detail {
			t.Errorf("third SKU %s: detail %q, want %q", third, r.str("detail"), detail)
		}
	}
	r := ts.admin(http.MethodPut, "/admin/campaigns/se",
		`{"campaign_id":"se","start_at":"2030-01-02T00:00:00Z","end_at":"2030-01-01T00:00:00Z","skus":[{"sku_id":"a","sale_limit":1}]}`)
	want(t, r, http.StatusBadRequest, "BAD_REQUEST")
	if d := r.str("detail"); d != "invalid definition: end_at must be after start_at" {
		t.Errorf("end_at before start_at: detail %q, want no SKU named", d)
	}
	want(t, ts.admin(http.MethodGet, "/admin/campaigns/se", nil), http.StatusNotFound, "NOT_FOUND")
}
