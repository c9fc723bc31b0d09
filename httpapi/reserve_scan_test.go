package httpapi

import (
	"strings"
	"testing"

	"github.com/valyala/fastjson"
	"pgregory.net/rapid"
)

// Whatever body the scan decodes, the parser decodes alike: the same ids
// and entry pass, no error. Bodies are drawn from pieces of the reserve
// body's shape and their near misses (escapes, other keys and values,
// stray bytes, missing or repeated fields).
func TestScanReserveBodyAgreesWithParser(t *testing.T) {
	var p fastjson.Parser
	space := rapid.SampledFrom([]string{"", "", " ", "\n\t", "\r", "\v", "\u00a0"})
	key := rapid.SampledFrom([]string{`"request_id"`, `"user_id"`, `"entry_pass"`, `"user_id"`, `"request_id"`,
		`"Request_ID"`, `"qty"`, `"user\u005fid"`, `request_id`, `"user_id `})
	value := rapid.OneOf(
		rapid.StringMatching(`"[A-Za-z0-9._:~-]{0,12}"`),
		rapid.StringMatching(`"[ -~]{0,6}"`),
		rapid.SampledFrom([]string{`"u\u0031"`, `"a\"b"`, `"é"`, "\"\x01\"", `1`, `null`, `["x"]`, `{}`, `"x`, `"\\"`, "\"\x7f\""}),
	)
	rapid.Check(t, func(t *rapid.T) {
		var b strings.Builder
		b.WriteString(space.Draw(t, "s0"))
		if rapid.IntRange(0, 20).Draw(t, "noBrace") > 0 {
			b.WriteString("{")
		}
		n := rapid.IntRange(0, 4).Draw(t, "fields")
		for i := range n {
			if i > 0 {
				b.WriteString(rapid.SampledFrom([]string{",", ",", ", ", ";", ""}).Draw(t, "comma"))
			}
			b.WriteString(space.Draw(t, "s1") + key.Draw(t, "key") + space.Draw(t, "s2"))
			b.WriteString(rapid.SampledFrom([]string{":", ":", " : ", "="}).Draw(t, "colon"))
			b.WriteString(space.Draw(t, "s3") + value.Draw(t, "value") + space.Draw(t, "s4"))
		}
		b.WriteString(rapid.SampledFrom([]string{"}", "}", "} ", "}\n", "", "}}", "} {}", "}x"}).Draw(t, "end"))
		body := []byte(b.String())
		got, ok := scanReserveBody(body, rapid.Bool().Draw(t, "views"))
		if !ok {
			return
		}
		want, err := parseReserveBody(&p, body)
		if err != nil {
			t.Fatalf("%q: scanned as %+v, the parser refuses it: %v", body, got, err)
		}
		if got.RequestID != want.RequestID || got.UserID != want.UserID || string(got.EntryPass) != string(want.EntryPass) {
			t.Fatalf("%q: scanned %q %q %q, parsed %q %q %q", body,
				got.RequestID, got.UserID, got.EntryPass, want.RequestID, want.UserID, want.EntryPass)
		}
	})
}

// The reserve body's usual shapes are scanned, not parsed.
func TestScanReserveBodyTakesTheUsualShapes(t *testing.T) {
	for body, want := range map[string][3]string{
		`{"request_id":"r1","user_id":"u1"}`:                           {"r1", "u1", ""},
		` { "user_id" : "u-2", "request_id":"r:2" } `:                  {"r:2", "u-2", ""},
		`{"user_id":"u1","entry_pass":"AQId.x_y"}`:                     {"", "u1", "AQId.x_y"},
		`{"request_id":"r","user_id":"u","entry_pass":"p"}`:            {"r", "u", "p"},
		"{\"request_id\":\"\",\n\"user_id\":\"\",\"entry_pass\":\"\"}": {"", "", ""},
	} {
		req, ok := scanReserveBody([]byte(body), false)
		if got := [3]string{req.RequestID, req.UserID, string(req.EntryPass)}; !ok || got != want {
			t.Errorf("%s: scanned %v %q, want %q", body, ok, got, want)
		}
	}
}

// A scanned reserve body costs one allocation, the copy of its ids, and
// none when they are views.
func TestScanReserveBodyAllocations(t *testing.T) {
	body := []byte(`{"request_id":"0f8fad5b-d9cb-469f-a165-70867728950e","user_id":"user-1234567"}`)
	for views, want := range map[bool]float64{false: 1, true: 0} {
		if n := testing.AllocsPerRun(100, func() {
			if _, ok := scanReserveBody(body, views); !ok {
				t.Fatal("not scanned")
			}
		}); n != want {
			t.Errorf("views %v: %v allocations, want %v", views, n, want)
		}
	}
}
