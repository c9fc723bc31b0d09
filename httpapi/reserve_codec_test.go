package httpapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/seckill/seckill/internal/timefmt"
	"github.com/valyala/fastjson"
	"pgregory.net/rapid"
)

// The hand-built 202 body is byte for byte what encoding/json makes of the
// same acceptedBody, for any strings (escaping ones take the slow path).
func TestAcceptedJSONMatchesEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		id := rapid.OneOf(rapid.StringMatching(`[A-Za-z0-9._:~-]{1,64}`), rapid.String())
		rid, req := id.Draw(t, "reservation_id"), id.Draw(t, "request_id")
		token := rapid.Uint32().Draw(t, "token")
		ms := rapid.Int64Range(0, 4102444800000).Draw(t, "expire_at")
		want, err := json.Marshal(acceptedBody{ReservationID: rid, RequestID: req, State: "PENDING_PAYMENT",
			TokenID: token, ExpireAt: timefmt.Millis(ms), StatusURL: ReservationURL(rid)})
		if err != nil {
			t.Fatal(err)
		}
		if got := acceptedJSON(rid, req, token, ms); string(got) != string(want) {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	})
}

func TestParseReserveBody(t *testing.T) {
	var p fastjson.Parser
	good := map[string][3]string{ // request_id, user_id, entry_pass
		`{"request_id":"r1","user_id":"u1"}`:            {"r1", "u1", ""},
		` { "user_id" : "u\u0031", "request_id":"r" } `: {"r", "u1", ""},
		`{"request_id":"r1"}`:                           {"r1", "", ""},
		`{"user_id":"u1","entry_pass":"AQ\u0049d"}`:     {"", "u1", "AQId"},
	}
	for body, want := range good {
		req, err := parseReserveBody(&p, []byte(body))
		if got := [3]string{req.RequestID, req.UserID, string(req.EntryPass)}; err != nil || got != want {
			t.Errorf("%s: got %q, %v; want %q", body, got, err, want)
		}
	}
	bad := map[string]string{
		``:                    "empty",
		`{"request_id":"r1",`: "malformed",
		`["r1","u1"]`:         "object",
		`{"request_id":"r1","user_id":"u1","qty":2}`: "unknown field",
		`{"Request_ID":"r1","user_id":"u1"}`:         "unknown field",
		`{"request_id":"r1","request_id":"r2"}`:      "repeated",
		`{"request_id":1,"user_id":"u1"}`:            "must be a string",
		`{"request_id":"r1","user_id":"u1"} {}`:      "malformed",
		`null`:                                       "object",
	}
	deep := `{"z":` + strings.Repeat("[", 2040) + strings.Repeat("]", 2040) + `}`
	if _, err := parseReserveBody(&p, []byte(deep)); err == nil || len(err.Error()) > 200 {
		t.Errorf("deep nesting: an error of %d bytes: %v", len(err.Error()), err)
	}
	for body, want := range bad {
		if _, err := parseReserveBody(&p, []byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error with %q", body, err, want)
		}
	}
}
