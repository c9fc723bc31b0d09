package bench

import (
	"encoding/json"
	"regexp"
	"testing"
	"unicode/utf8"
)

// reserveAnswerSamples are the seed corpus of FuzzDecodeReserveAnswer: the
// first ten are answers the decoder must read, the rest near misses, valid
// JSON or not.
var reserveAnswerSamples = []string{
	// seckilld's 202, 409 and 429 bodies, and the null server's.
	`{"reservation_id":"c~sku-1~17","request_id":"bench-hot-1","state":"PENDING_PAYMENT","token_id":17,"expire_at":"2026-01-02T03:04:05.678Z","status_url":"/v1/reservations/c~sku-1~17"}`,
	`{"error":"SOLD_OUT"}`,
	`{"error":"ALREADY_PURCHASED","reservation_id":"c~s~3","status_url":"/v1/reservations/c~s~3"}`,
	`{"error":"QUEUE_FULL","detail":"admission queue is full"}`,
	`{"reservation_id":"null","request_id":"null","state":"PENDING_PAYMENT","token_id":"null","expire_at":"2100-01-01T00:00:00Z","status_url":"/v1/reservations/null"}`,
	``,
	`{}`,
	" \t\r\n{ \"token_id\" : 0 , \"reservation_id\" : \"a\" } \n",
	`{"token_id":-12}`,
	`{"reservation_id":"a","reservation_id":"b"}`,
	// Near misses.
	`{"token_id":1.5}`,
	`{"token_id":1e3}`,
	`{"token_id":012}`,
	`{"token_id":-}`,
	`{"token_id":null}`,
	`{"token_id":[1]}`,
	`{"reservation_id":null}`,
	`{"reservation_id":"a\"b"}`,
	`{"reservation_id":"a\u0041"}`,
	"{\"reservation_id\":\"caf\xc3\xa9\"}",
	"{\"reservation_id\":\"bad\xff\"}",
	"{\"reservation_id\":\"tab\there\"}",
	`{"Reservation_ID":"a"}`,
	`{"reservation_id":"a","RESERVATION_ID":"b"}`,
	`{"other":"x"}`,
	`{"state":1}`,
	`{"error":"SOLD_OUT",}`,
	`{"error":"SOLD_OUT"} x`,
	`{"error":"SOLD_OUT"}{}`,
	`{"error" "SOLD_OUT"}`,
	`{"error":"SOLD_OUT"`,
	`{"error":"SOLD_OUT`,
	`{`,
	`[]`,
	`null`,
	`"x"`,
	`{,}`,
	`{"reservation_id":true}`,
}

// decodeWithEncodingJSON is the reference reading of a reservation answer:
// encoding/json into a map (keys exact, the last repeated one wins), then
// each field as ReserveAnswer's type reads it. ok is false when encoding/json
// refuses the body.
func decodeWithEncodingJSON(body []byte) (fields reserveFields, ok bool) {
	if len(body) == 0 {
		return fields, true
	}
	var object map[string]json.RawMessage
	if err := json.Unmarshal(body, &object); err != nil || object == nil {
		return fields, false
	}
	var reservationID, tokenID FlexibleID
	targets := map[string]any{"reservation_id": &reservationID, "token_id": &tokenID,
		"expire_at": &fields.expireAt, "error": &fields.errorCode}
	for key, target := range targets {
		if raw, found := object[key]; found {
			if err := json.Unmarshal(raw, target); err != nil {
				return fields, false
			}
		}
	}
	fields.reservationID, fields.tokenID = string(reservationID), string(tokenID)
	return fields, true
}

// surrogateEscape finds a \u escape of a UTF-16 surrogate.
var surrogateEscape = regexp.MustCompile(`\\u[dD][89a-fA-F]`)

// checkDecodeMatchesJSON fails when encoding/json reads a body and
// decodeReserveAnswer refuses it or reads it differently. Bodies with
// invalid UTF-8 or a surrogate escape are not compared: encoding/json
// replaces a bad byte or a lone surrogate with U+FFFD, fastjson keeps the
// bytes or the escape's text, and the server writes neither. It reports
// whether the body decoded.
func checkDecodeMatchesJSON(t *testing.T, body []byte) bool {
	t.Helper()
	fields, err := decodeReserveAnswer(body)
	want, ok := decodeWithEncodingJSON(body)
	if !ok || !utf8.Valid(body) || surrogateEscape.Match(body) {
		return err == nil
	}
	if err != nil {
		t.Fatalf("%q: encoding/json reads %+v, decodeReserveAnswer refuses it: %v", body, want, err)
	}
	if fields != want {
		t.Fatalf("%q: decodeReserveAnswer %+v, encoding/json %+v", body, fields, want)
	}
	return true
}

func TestDecodeReserveAnswerMatchesEncodingJSON(t *testing.T) {
	for i, sample := range reserveAnswerSamples {
		decoded := checkDecodeMatchesJSON(t, []byte(sample))
		if i < 10 && !decoded {
			t.Errorf("%q: not decoded", sample)
		}
	}
}

func TestDecodeReserveAnswerReadsTheFields(t *testing.T) {
	fields, err := decodeReserveAnswer([]byte(reserveAnswerSamples[0]))
	want := reserveFields{reservationID: "c~sku-1~17", tokenID: "17", expireAt: "2026-01-02T03:04:05.678Z"}
	if err != nil || fields != want {
		t.Fatalf("got %+v %v, want %+v", fields, err, want)
	}
	fields, err = decodeReserveAnswer([]byte(`{"reservation_id":"a","reservation_id":"b","error":"SOLD_OUT"}`))
	if err != nil || fields.reservationID != "b" || fields.errorCode != "SOLD_OUT" {
		t.Fatalf("got %+v %v: the last of repeated keys wins", fields, err)
	}
	fields, err = decodeReserveAnswer([]byte(`{"reservation_id":"a\u0062","token_id":1.5e1,"error":"x","other":[1,{"y":2}]}`))
	if err != nil || fields.reservationID != "ab" || fields.tokenID != "1.5e1" || fields.errorCode != "x" {
		t.Fatalf("got %+v %v", fields, err)
	}
}

func TestDecodeReserveAnswerRefusesWhatIsNotAnAnswer(t *testing.T) {
	for _, body := range []string{`{"reservation_id":`, "   ", `[]`, `"x"`, `{"token_id":true}`, `{"error":1}`, `{"a":1} {}`} {
		if fields, err := decodeReserveAnswer([]byte(body)); err == nil {
			t.Errorf("%q read as %+v", body, fields)
		}
	}
}

func FuzzDecodeReserveAnswer(f *testing.F) {
	for _, sample := range reserveAnswerSamples {
		f.Add([]byte(sample))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkDecodeMatchesJSON(t, body)
	})
}
