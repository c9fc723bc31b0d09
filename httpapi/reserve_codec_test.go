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
// same acceptedBody, for any ids the engine gives (sku.ValidID's alphabet,
// and the reservation id's separator).
func TestAcceptedJSONMatchesEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rid := rapid.StringMatching(`[A-Za-z0-9._:~-]{1,222}`).Draw(t, "reservation_id")
		req := rapid.StringMatching(`[A-Za-z0-9._:-]{1,64}`).Draw(t, "request_id")
		token := rapid.Uint32().Draw(t, "token")
		ms := rapid.Int64Range(0, 4102444800000).Draw(t, "expire_at")
		want, err := json.Marshal(acceptedBody{ReservationID: rid, RequestID: req, State: "PENDING_PAYMENT",
			TokenID: token, ExpireAt: timefmt.Millis(ms), StatusURL: ReservationURL(rid)})
		if err != nil {
			t.Fatal(err)
		}
		if got := appendAccepted(nil, rid, &acceptedAnswer{requestID: req, tokenID: token, expireAt: ms}); string(got) != string(want) {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	})
}

func TestParseReserveBody(t *testing.T) {
	var p fastjson.Parser
	good := map[string][3]string{ // request_id, user_id, entry_pass
		`{"request_id":"r1","user_id":"u1"}`:            {"r1", "u1", ""},
		` { "user_id" : "u\u0031", "request_id":"r" } `: {"r", "u1", ""},
		`{"request_id":"","user_id":""}`:                {"", "", ""}, // given: the id rule refuses them (checkID)
		`{"user_id":"u1","entry_pass":"AQ\u0049d"}`:     {"", "u1", "AQId"},
	}
	for body, want := range good {
		req, err := parseReserveBody(&p, []byte(body))
		if got := [3]string{req.RequestID, req.UserID, string(req.EntryPass)}; err != nil || got != want {
			t.Errorf("%s: got %q, %v; want %q", body, got, err, want)
		}
	}
	// What is not JSON is INVALID_JSON; JSON that is not the reserve body
	// is BAD_REQUEST; both say what is wrong in the client's terms.
	bad := map[string][2]string{ // reason, detail
		``:                                {reasonInvalidJSON, "the body is empty: a JSON object is expected"},
		" \r\n":                           {reasonInvalidJSON, "the body is empty: a JSON object is expected"},
		`{"request_id":"r1",`:             {reasonInvalidJSON, "the body is not complete JSON: it ends at byte 19, inside the object"},
		`{"request_id":"r1","user_id":"u`: {reasonInvalidJSON, "the body is not complete JSON: it ends at byte 31, inside the object"},
		`{"request_id":"r1" "user_id":"u1"}`: {reasonInvalidJSON,
			"the body is not JSON: invalid character '\"' after object key:value pair (at byte 20)"},
		`request_id=r1&user_id=u1`:              {reasonInvalidJSON, "the body is not JSON: invalid character 'r' looking for beginning of value (at byte 1)"},
		`{"request_id":"r1","user_id":"u1"} {}`: {reasonInvalidJSON, "the body is not one JSON value: more follows the object, at byte 36"},
		`["r1","u1"]`:                           {reasonBadRequest, "the body must be a JSON object"},
		`null`:                                  {reasonBadRequest, "the body must be a JSON object"},
		`{"request_id":"r1","user_id":"u1","qty":2}`: {reasonBadRequest, `unknown field "qty"`},
		`{"Request_ID":"r1","user_id":"u1"}`:         {reasonBadRequest, `unknown field "Request_ID"`},
		`{"request_id":"r1","request_id":"r2"}`:      {reasonBadRequest, `field "request_id" repeated`},
		`{"request_id":1,"user_id":"u1"}`:            {reasonBadRequest, "request_id: must be a string"},
		`{"request_id":"r1"}`:                        {reasonBadRequest, "user_id is missing"},
		`{"user_id":"u1"}`:                           {reasonBadRequest, "request_id is missing"},
		`{"user_id":"u1","entry_pass":""}`:           {reasonBadRequest, "request_id is missing"},
		`{}`:                                         {reasonBadRequest, "request_id is missing"},
		`{"z":` + strings.Repeat("[", 400) + strings.Repeat("]", 400) + `}`: {reasonBadRequest, "the body nests values deeper than 300 levels"},
	}
	for body, want := range bad {
		_, err := parseReserveBody(&p, []byte(body))
		if err == nil {
			t.Errorf("%.60q: accepted", body)
			continue
		}
		rep := bodyError(err)
		var got errorBody
		if e := json.Unmarshal(rep.body, &got); e != nil || rep.status != 400 || [2]string{got.Error, got.Detail} != want {
			t.Errorf("%.60q: %d %s, want 400 %q", body, rep.status, rep.body, want)
		}
	}
	deep := `{"z":` + strings.Repeat("[", 2040) + strings.Repeat("]", 2040) + `}`
	if _, err := parseReserveBody(&p, []byte(deep)); err == nil || len(err.Error()) > 200 {
		t.Errorf("deep nesting: an error of %d bytes: %v", len(err.Error()), err)
	}
}

// BenchmarkParseReserveBody is the reserve body's decoding alone, on the
// success path (a pooled parser, the two ids copied): its allocs/op are
// the two id strings.
func BenchmarkParseReserveBody(b *testing.B) {
	body := []byte(`{"request_id":"0f8fad5b-d9cb-469f-a165-70867728950e","user_id":"user-1234567"}`)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p := reserveParsers.Get()
			req, err := parseReserveBody(p, body)
			reserveParsers.Put(p)
			if err != nil || req.UserID == "" {
				b.Fatal(err)
			}
		}
	})
}
