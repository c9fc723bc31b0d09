package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Every route that reads a body answers one that is not JSON (cut short,
// not JSON at all, more after the value) 400 INVALID_JSON, with a detail
// in the client's terms and never the parser's own words; and a body
// that leaves out a required field 400 BAD_REQUEST "<field> is missing",
// which a field given but bad does not get. Over real HTTP, on the real
// engine.
func TestBodiesNotJSONAndMissingFields(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{config: passConfig(t)})
	ts.define(campaign("bb", "15m", map[string]int{"s": 5}))
	id := ts.reserve("bb", "s", "r1", "u1").str("reservation_id")
	admin := map[string]string{"Authorization": "Bearer " + testToken}
	issuer := map[string]string{"Authorization": "Bearer " + testIssuerToken}
	routes := []struct {
		path    string
		method  string
		header  map[string]string
		missing map[string]string // body -> the field it leaves out
	}{
		{"/v1/campaigns/bb/skus/s/reservations", http.MethodPost, nil, map[string]string{
			`{"request_id":"r2"}`: "user_id", `{"user_id":"u2"}`: "request_id", `{}`: "request_id"}},
		{"/v1/campaigns/bb/skus/s/reservations:batch", http.MethodPost, nil, map[string]string{`{}`: "items"}},
		{"/v1/campaigns/bb/skus/s/entries", http.MethodPost, nil, map[string]string{
			`{"request_id":"r2"}`: "user_id", `{"user_id":"u2"}`: "request_id"}},
		{"/v1/campaigns/bb/skus/s/entry-passes", http.MethodPost, issuer, map[string]string{`{"tier":1}`: "user_id"}},
		{"/v1/reservations/" + id + "/payment", http.MethodPost, nil, map[string]string{`{"amount":1}`: "payment_id"}},
		{"/v1/reservations/" + id + "/cancel", http.MethodPost, nil, nil},
		{"/admin/campaigns/bb2", http.MethodPut, admin, map[string]string{
			`{"end_at":"2030-01-02T00:00:00Z","skus":[{"sku_id":"a","sale_limit":1}]}`:                                                    "start_at",
			`{"start_at":"2030-01-01T00:00:00Z","end_at":"2030-01-02T00:00:00Z"}`:                                                         "skus",
			`{"start_at":"2030-01-01T00:00:00Z","end_at":"2030-01-02T00:00:00Z","skus":[{"sku_id":"a"}]}`:                                 "skus[0].sale_limit",
			`{"start_at":"2030-01-01T00:00:00Z","end_at":"2030-01-02T00:00:00Z","skus":[{"sku_id":"a","sale_limit":1},{"sale_limit":1}]}`: "skus[1].sku_id",
		}},
		{"/admin/campaigns/bb/skus/s/pause", http.MethodPost, admin, nil},
		{"/admin/campaigns/bb/skus/s/resume", http.MethodPost, admin, nil},
		{"/admin/campaigns/bb/skus/s/snapshot", http.MethodPost, admin, nil},
		{"/admin/campaigns/bb/skus/s/lottery/draw", http.MethodPost, admin, map[string]string{`{}`: "beacon", `{"beacon":{}}`: "beacon.round"}},
		{"/admin/reservations/" + id + "/release", http.MethodPost, admin, nil},
	}
	notJSON := map[string]string{ // body -> the start of its detail
		`{"request_id":"r2","user_id":"u`: "the body is not complete JSON: it ends at byte 31, inside the object",
		`{"request_id":"r2",`:             "the body is not complete JSON: it ends at byte 19, inside the object",
		`{"request_id":"r2" "user_id":1}`: `the body is not JSON: invalid character '"' after object key:value pair (at byte 20)`,
		`request_id=r2&user_id=u2`:        "the body is not JSON: invalid character 'r' looking for beginning of value (at byte 1)",
		`{"request_id":"r2"} {}`:          "the body is not one JSON value: more follows the object, at byte 21",
	}
	for _, route := range routes {
		for body, detail := range notJSON {
			r := call(t, route.method, ts.base+route.path, body, route.header)
			want(t, r, http.StatusBadRequest, "INVALID_JSON")
			if r.str("detail") != detail {
				t.Errorf("%s %s: detail %q, want %q", route.path, body, r.str("detail"), detail)
			}
		}
		for body, field := range route.missing {
			r := call(t, route.method, ts.base+route.path, body, route.header)
			want(t, r, http.StatusBadRequest, "BAD_REQUEST")
			if r.str("detail") != field+" is missing" {
				t.Errorf("%s %s: detail %q, want %q", route.path, body, r.str("detail"), field+" is missing")
			}
		}
	}
	// An empty body is no JSON either, where a body is needed.
	r := ts.post("/v1/campaigns/bb/skus/s/reservations", "")
	want(t, r, http.StatusBadRequest, "INVALID_JSON")
	if r.str("detail") != "the body is empty: a JSON object is expected" {
		t.Errorf("an empty reserve: %v", r)
	}
	// Given but bad is not missing.
	r = ts.post("/v1/campaigns/bb/skus/s/reservations", `{"request_id":"r2","user_id":""}`)
	want(t, r, http.StatusBadRequest, "BAD_REQUEST")
	if d := r.str("detail"); !strings.HasPrefix(d, "user_id must be 1-64 characters") {
		t.Errorf("an empty user_id: %v", r)
	}
	// Nothing was changed by any of them.
	if g := ts.get("/v1/reservations/" + id); g.str("state") != "PENDING_PAYMENT" {
		t.Fatalf("a refused body changed the reservation: %v", g)
	}
}

// A batch's items are answered as the single reserve would answer each:
// an item that leaves out user_id gets "user_id is missing", and a batch
// whose envelope is cut short is INVALID_JSON as a whole.
func TestBatchItemsMissingFields(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	ts.define(campaign("bi", "15m", map[string]int{"s": 5}))
	path := "/v1/campaigns/bi/skus/s/reservations:batch"
	r := ts.post(path, `{"items":[{"request_id":"r1","user_id":"u1"},{"request_id":"r2"},{"user_id":"u3"},{"request_id":"r4","user_id":""},7]}`)
	want(t, r, http.StatusOK, "")
	var got struct {
		Results []struct {
			Status int
			Body   map[string]any
		}
	}
	if err := json.Unmarshal(r.raw, &got); err != nil || len(got.Results) != 5 {
		t.Fatalf("%v: %s", err, r.raw)
	}
	for i, want := range []struct {
		status         int
		reason, detail string
	}{
		{http.StatusAccepted, "", ""},
		{http.StatusBadRequest, "BAD_REQUEST", "user_id is missing"},
		{http.StatusBadRequest, "BAD_REQUEST", "request_id is missing"},
		{http.StatusBadRequest, "BAD_REQUEST", `user_id must be 1-64 characters of [A-Za-z0-9._:-], not "." or ".."`},
		{http.StatusBadRequest, "BAD_REQUEST", "the body must be a JSON object"},
	} {
		res := got.Results[i]
		if res.Status != want.status || want.reason != "" && (res.Body["error"] != want.reason || res.Body["detail"] != want.detail) {
			t.Errorf("item %d: %d %v, want %d %s %q", i, res.Status, res.Body, want.status, want.reason, want.detail)
		}
	}
	r = ts.post(path, `{"items":[{"request_id":"r5","user_id":"u5"}`)
	want(t, r, http.StatusBadRequest, "INVALID_JSON")
	if d := r.str("detail"); d != "the body is not complete JSON: it ends at byte 44, inside the object" {
		t.Errorf("a cut batch: %v", r)
	}
}
