package httpapi

import (
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fastjson"

	"github.com/seckill/seckill/actors"
)

// Decoding errors are answered field by field in JSON's terms, bounded,
// without Go's type, struct or package names.
func TestDecodeErrorDetails(t *testing.T) {
	long := strings.Repeat("x", 3000)
	for _, c := range []struct {
		body string
		into func() any
		want string
	}{
		{`{"payment_id":"p","amount":1.5}`, func() any { return &paymentRequest{} }, "amount: must be an integer"},
		{`{"payment_id":"p","amount":"1"}`, func() any { return &paymentRequest{} }, "amount: must be an integer"},
		{`{"payment_id":"p","amount":99999999999999999999}`, func() any { return &paymentRequest{} },
			"amount: must be an integer from 0 to 9223372036854775807"},
		{`{"payment_id":"p","amount":-1}`, func() any { return &paymentRequest{} },
			"amount: must be an integer from 0 to 9223372036854775807"},
		{`{"payment_id":"p","amount":-1.5}`, func() any { return &paymentRequest{} }, "amount: must be an integer"},
		{`{"payment_id":"p","amount":1e3}`, func() any { return &paymentRequest{} }, "amount: must be an integer"},
		{`{"payment_id":"p","amount":true}`, func() any { return &paymentRequest{} }, "amount: must be an integer"},
		{`{"payment_id":"p","amount":{}}`, func() any { return &paymentRequest{} }, "amount: must be an integer"},
		{`{"payment_id":7}`, func() any { return &paymentRequest{} }, "payment_id: must be a string"},
		{`{"payment_id":"p","x":1}`, func() any { return &paymentRequest{} }, `unknown field "x"`},
		{`{"payment_id":"p",}`, func() any { return &paymentRequest{} },
			"the body is not JSON: invalid character '}' looking for beginning of object key string (at byte 19)"},
		{`{"payment_id":"p"`, func() any { return &paymentRequest{} }, "the body is not complete JSON: it ends at byte 17, inside the object"},
		{`{"payment_id":"p`, func() any { return &paymentRequest{} }, "the body is not complete JSON: it ends at byte 16, inside the object"},
		{`["p"]`, func() any { return &paymentRequest{} }, "the body must be a JSON object"},
		{`{"payment_id":"p"} 1`, func() any { return &paymentRequest{} }, "the body is not one JSON value: more follows the object, at byte 20"},
		{`{"amount":1}`, func() any { return &paymentRequest{} }, "payment_id is missing"},
		{`{"payment_id":"p"} {"amount":"x"`, func() any { return &paymentRequest{} }, "the body is not one JSON value: more follows the object, at byte 20"},
		{`{"skus":[{"sku_id":"a","sale_limit":-1}]}`, func() any { return &Campaign{} }, `skus[0].sale_limit (sku_id "a"): must be an integer from 1 to 1073741824`},
		{`{"skus":{}}`, func() any { return &Campaign{} }, "skus: must be an array"},
		{`{"release_on_close":"yes"}`, func() any { return &Campaign{} }, "release_on_close: must be true or false"},
		{`{"start_at":"tomorrow"}`, func() any { return &Campaign{} }, "start_at: must be an RFC 3339 time such as 2030-01-01T12:00:00Z"},
		// The UTC year must be 1970..9999: "0000-01-01T00:00:00+01:00" is
		// year -1 in UTC, which RFC 3339 cannot write back.
		{`{"start_at":"0000-01-01T00:00:00+01:00"}`, func() any { return &Campaign{} },
			"start_at: must be a time from 1970-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z (UTC)"},
		{`{"end_at":"1969-12-31T23:59:59.999Z"}`, func() any { return &Campaign{} },
			"end_at: must be a time from 1970-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z (UTC)"},
		{`{"end_at":"9999-12-31T23:00:00-01:00"}`, func() any { return &Campaign{} },
			"end_at: must be a time from 1970-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z (UTC)"},
		{`{"start_at":"2030-01-01T00:00:00Z","end_at":1}`, func() any { return &Campaign{} }, "end_at: must be a string"},
		{`{"skus":[{"bogus":1}]}`, func() any { return &Campaign{} }, `skus[0]: unknown field "bogus"`},
		{`{"skus":[{"sku_id":"a","sale_limit":1},{"sku_id":"b","sale_limit":1,"start_at":"x"}]}`, func() any { return &Campaign{} }, `skus[1]: unknown field "start_at"`},
		{`{"skus":[{"sku_id":"a","sale_limit":1},5]}`, func() any { return &Campaign{} }, "skus[1]: must be an object"},
		{`{"beacon":{"round":1,"x":2}}`, func() any { return &drawRequest{} }, `beacon: unknown field "x"`},
		{`{"reason":"x"}`, func() any { return &struct{}{} }, `unknown field "reason"`},
		// Required fields are named when left out, below the top too.
		{`{"end_at":"2030-01-01T00:00:00Z","skus":[]}`, func() any { return &Campaign{} }, "start_at is missing"},
		{`{"start_at":"2030-01-01T00:00:00Z","end_at":"2030-01-02T00:00:00Z","skus":[{"sku_id":"a","sale_limit":1},{"sku_id":"b"}]}`,
			func() any { return &Campaign{} }, "skus[1].sale_limit is missing"},
		{`{"user_id":"u","entry_pass":"p"}`, func() any { return &enterRequest{} }, ""},
		{`{"request_id":"r"}`, func() any { return &enterRequest{} }, "user_id is missing"},
		{`{"tier":1}`, func() any { return &issueRequest{} }, "user_id is missing"},
		{`{"beacon":{"randomness":""}}`, func() any { return &drawRequest{} }, "beacon.round is missing"},
		{`{}`, func() any { return &drawRequest{} }, "beacon is missing"},
		// null is no object, though encoding/json would take it for one.
		{`null`, func() any { return &paymentRequest{} }, "the body must be a JSON object"},
		{" null\r\n", func() any { return &Campaign{} }, "the body must be a JSON object"},
		{"", func() any { return &paymentRequest{} }, "the body is empty: a JSON object is expected"},
		// Only JSON's whitespace is whitespace.
		{"\v", func() any { return &struct{}{} }, `the body is not JSON: invalid character '\v' looking for beginning of value (at byte 1)`},
		// Keys are exact and unique at every level, as in the reserve body.
		{`{"Payment_Id":"z1","AMOUNT":777}`, func() any { return &paymentRequest{} }, `unknown field "Payment_Id"`},
		{`{"payment_id":"p1","payment_id":"p2"}`, func() any { return &paymentRequest{} }, `field "payment_id" repeated`},
		{`{"skus":[{"SKU_ID":"a","Sale_Limit":5}]}`, func() any { return &Campaign{} }, `skus[0]: unknown field "SKU_ID"`},
		{`{"skus":[{"sku_id":"a","sku_id":"b"}]}`, func() any { return &Campaign{} }, `skus[0]: field "sku_id" repeated`},
		{`{"skus":[],"skus":[{"sku_id":"a","sale_limit":5}]}`, func() any { return &Campaign{} }, `field "skus" repeated`},
		{`{"Campaign_ID":"c"}`, func() any { return &Campaign{} }, `unknown field "Campaign_ID"`},
		{`{"` + long + `":1}`, func() any { return &struct{}{} }, `unknown field "` + long[:maxDetail-len(`unknown field "`)] + "..."},
	} {
		err := decodeJSON([]byte(c.body), c.into())
		if c.want == "" && err == nil {
			continue
		}
		if err == nil || err.Error() != c.want {
			t.Errorf("%.60s: %v, want %q", c.body, err, c.want)
			continue
		}
		if len(err.Error()) > maxDetail+len("...") {
			t.Errorf("%.60s: a detail of %d bytes", c.body, len(err.Error()))
		}
		for _, internal := range []string{"Go ", "struct", "int64", "uint32", "paymentRequest", "campaignJSON", "json:", "time."} {
			if strings.Contains(err.Error(), internal) {
				t.Errorf("%.60s: %q names %q", c.body, err, internal)
			}
		}
	}
}

// A body that carries nothing (cancel, the admin actions) is nothing, JSON
// whitespace or {}; anything else is refused with the detail any other
// body would get.
func TestDecodeNoFields(t *testing.T) {
	for _, body := range []string{"", " ", "\r\n\t", "{}", " {\n} \n"} {
		if err := decodeNoFields([]byte(body)); err != nil {
			t.Errorf("%q: %v, want accepted", body, err)
		}
	}
	for body, want := range map[string]string{
		`{"reason":"fraud"}`:      `unknown field "reason"`,
		`{"sku_id":"other"}`:      `unknown field "sku_id"`,
		`{"Reason":1,"reason":2}`: `unknown field "Reason"`,
		`{"":null}`:               `unknown field ""`,
		`null`:                    "the body must be a JSON object",
		`[]`:                      "the body must be a JSON object",
		`"fraud"`:                 "the body must be a JSON object",
		`0`:                       "the body must be a JSON object",
		`{`:                       "the body is not complete JSON: it ends at byte 1, inside the object",
		`{}{}`:                    "the body is not one JSON value: more follows the object, at byte 3",
		`{} {"reason":"fraud"}`:   "the body is not one JSON value: more follows the object, at byte 4",
		`reason=fraud`:            "the body is not JSON: invalid character 'r' looking for beginning of value (at byte 1)",
		"\v":                      `the body is not JSON: invalid character '\v' looking for beginning of value (at byte 1)`,
		"\u00a0{}":                `the body is not JSON: invalid character 'Â' looking for beginning of value (at byte 1)`,
	} {
		if err := decodeNoFields([]byte(body)); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}

// An amount is any integer from 0 to math.MaxInt64, or absent (null too).
func TestPaymentAmount(t *testing.T) {
	for body, want := range map[string]int64{
		`{"payment_id":"p","amount":0}`:                   0,
		`{"payment_id":"p","amount":-0}`:                  0,
		`{"payment_id":"p","amount":1999}`:                1999,
		`{"payment_id":"p","amount":9223372036854775807}`: math.MaxInt64,
	} {
		var req paymentRequest
		if err := decodeJSON([]byte(body), &req); err != nil || req.Amount == nil || int64(*req.Amount) != want {
			t.Errorf("%s: %v %v, want %d", body, req.Amount, err, want)
		}
	}
	for _, body := range []string{`{"payment_id":"p"}`, `{"payment_id":"p","amount":null}`} {
		var req paymentRequest
		if err := decodeJSON([]byte(body), &req); err != nil || req.Amount != nil {
			t.Errorf("%s: %v %v, want no amount", body, req.Amount, err)
		}
	}
	if m := minorUnits(5); m.UnmarshalJSON([]byte("null")) != nil || m != 5 {
		t.Errorf("null changed an amount: %d", m)
	}
}

// A payment_window that is not a duration, or one out of 1ms..24h for a
// SKU the engine does not hold, is named with its range, not described by
// the time package.
func TestDefinitionsPaymentWindowDetail(t *testing.T) {
	e, err := actors.Open(actors.Config{DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c := DemoCampaign(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	for _, bad := range []string{"soon", "0s", "-15m", "999us", "24h0m0.001s", "25h", "720h"} {
		c.PaymentWindow = bad
		if _, err := c.definitionsFor(e); err == nil || err.Error() != `payment_window: must be a duration from "1ms" to "24h", such as "15m" or "90s"` {
			t.Errorf("payment_window %q: %v", bad, err)
		}
	}
	for _, ok := range []string{"1ms", "15m", "24h", "1440m"} {
		c.PaymentWindow = ok
		if _, err := c.definitionsFor(e); err != nil {
			t.Errorf("payment_window %q: %v", ok, err)
		}
	}
}

// The bounds the detail names are exact: each is accepted, and the
// millisecond beyond it is refused with that detail (a definition keeps
// milliseconds, so a bound said to the second would misstate the last one).
func TestCampaignTimeRangeDetailIsExact(t *testing.T) {
	bounds := regexp.MustCompile(`^a time from (\S+) to (\S+) \(UTC\)$`).FindStringSubmatch(campaignTimeRange)
	if bounds == nil {
		t.Fatalf("campaignTimeRange %q names no bounds", campaignTimeRange)
	}
	for i, step := range []time.Duration{-time.Millisecond, time.Millisecond} {
		bound := bounds[1+i]
		at, err := parseCampaignTime("end_at", bound)
		if err != nil {
			t.Fatalf("the bound %s the detail names is refused: %v", bound, err)
		}
		// Written at UTC-1: the millisecond after the last one of year
		// 9999 has no four-digit year in UTC.
		beyond := at.Add(step).In(time.FixedZone("", -3600)).Format("2006-01-02T15:04:05.000Z07:00")
		_, err = parseCampaignTime("end_at", beyond)
		if want := "end_at: must be " + campaignTimeRange; err == nil || err.Error() != want {
			t.Errorf("%s, 1 ms beyond %s: %v, want %q", beyond, bound, err, want)
		}
	}
}

// A lottery SKU's entry window is held to the same years as start_at.
func TestLotteryEntryTimeRange(t *testing.T) {
	var c Campaign
	body := `{"campaign_id":"c","start_at":"2030-01-01T00:00:00Z","end_at":"2030-01-02T00:00:00Z","skus":[{"sku_id":"a","sale_limit":5,` +
		`"allocation":"lottery","entries_open_at":"0001-01-01T00:00:00Z","entries_close_at":"2029-12-31T00:00:00Z","beacon":{"source":"x","round":1}}]}`
	if err := decodeJSON([]byte(body), &c); err != nil {
		t.Fatal(err)
	}
	_, err := c.Definitions()
	if want := `skus[0].entries_open_at (sku_id "a"): must be a time from 1970-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z (UTC)`; err == nil || err.Error() != want {
		t.Fatalf("Definitions: %v, want %q", err, want)
	}
}

// A body nested deeper than encoding/json goes (10,000 levels: only a
// batch, 512 KiB, or a campaign PUT, 1 MiB, is long enough) is JSON all
// the same: 400 BAD_REQUEST with the depth the server takes, as a body
// nested beyond fastjson's 300 levels is, never INVALID_JSON worded as a
// bad character.
func TestBodyNestedBeyondEncodingJSON(t *testing.T) {
	nested := func(prefix string) []byte {
		return []byte(prefix + strings.Repeat("[", 10_001) + strings.Repeat("]", 10_001) + "}")
	}
	const want = "the body nests values deeper than 300 levels"
	check := func(route string, err error) {
		t.Helper()
		rep := bodyError(err)
		var got errorBody
		if e := json.Unmarshal(rep.body, &got); e != nil || rep.status != 400 || got.Error != reasonBadRequest || got.Detail != want {
			t.Errorf("%s: %d %s, want 400 %s %q", route, rep.status, rep.body, reasonBadRequest, want)
		}
	}
	_, err := parseBatchEnvelope(nested(`{"items":`))
	check("batch", err)
	check("campaign PUT", decodeJSON(nested(`{"campaign_id":"c","skus":`), &Campaign{}))
	var p fastjson.Parser
	_, err = parseReserveBody(&p, nested(`{"request_id":"r","user_id":"u","x":`))
	check("reserve", err)
}
