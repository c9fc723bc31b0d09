package httpapi_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// apiTime is the one format of times in answers: RFC 3339 in UTC with
// milliseconds.
var apiTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// checkTimes fails the test for every time in a JSON answer (a key "at"
// or ending in "_at") that is not in the API's format; it returns how many
// it saw.
func checkTimes(t *testing.T, where string, v any) int {
	t.Helper()
	seen := 0
	switch v := v.(type) {
	case map[string]any:
		for key, value := range v {
			if s, ok := value.(string); ok && (key == "at" || strings.HasSuffix(key, "_at")) {
				seen++
				if !apiTime.MatchString(s) {
					t.Errorf("%s: %s = %q, want RFC 3339 UTC with milliseconds", where, key, s)
				}
				continue
			}
			seen += checkTimes(t, where, value)
		}
	case []any:
		for _, value := range v {
			seen += checkTimes(t, where, value)
		}
	}
	return seen
}

// Every time the public and admin answers carry has the same format,
// whether the client sent it (a campaign's window) or the server made it.
func TestTimesHaveOneFormat(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	body := campaign("tf", "15m", map[string]int{"s": 5})
	body["start_at"], body["end_at"] = "2020-01-01T12:00:00Z", "2099-01-01T12:00:00.5+01:00"
	defined := ts.admin(http.MethodPut, "/admin/campaigns/tf", body)
	want(t, defined, http.StatusCreated, "")
	if skus, _ := defined.body["skus"].([]any); len(skus) != 1 || skus[0].(map[string]any)["start_at"] != "2020-01-01T12:00:00.000Z" ||
		skus[0].(map[string]any)["end_at"] != "2099-01-01T11:00:00.500Z" {
		t.Fatalf("define: %v", defined)
	}
	paid := ts.reserve("tf", "s", "r1", "u1")
	closed := ts.reserve("tf", "s", "r2", "u2")
	pay := ts.post("/v1/reservations/"+paid.str("reservation_id")+"/payment", map[string]any{"payment_id": "p1"})
	ts.post("/v1/reservations/"+closed.str("reservation_id")+"/cancel", nil)
	ts.post("/v1/reservations/"+closed.str("reservation_id")+"/payment", map[string]any{"payment_id": "late"})
	answers := map[string]response{
		"define":     defined,
		"reserve":    paid,
		"pay":        pay,
		"get paid":   ts.get("/v1/reservations/" + paid.str("reservation_id")),
		"get closed": ts.get("/v1/reservations/" + closed.str("reservation_id")),
		"lookup":     ts.get("/v1/campaigns/tf/skus/s/requests/r1"),
		"status":     ts.get("/v1/campaigns/tf/skus/s"),
		"refunds":    ts.admin(http.MethodGet, "/admin/campaigns/tf/skus/s/refunds", nil),
	}
	seen := 0
	for name, r := range answers {
		if r.status >= 300 {
			t.Fatalf("%s: %v", name, r)
		}
		seen += checkTimes(t, name, r.body)
	}
	// define 2, reserve 1, pay 1, get paid 3, get closed 3, lookup 3,
	// status 2, refunds 1.
	if seen != 16 {
		t.Errorf("%d times checked, want 16", seen)
	}
}
