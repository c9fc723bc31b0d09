package bench

import (
	"encoding/json"
	"math/rand"
	"strings"
	"testing"
)

// reserveAnswerSamples are bodies the scanner must read itself, plus
// near misses it must leave to encoding/json.
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
	// Left to encoding/json (valid or not).
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

// checkScanMatchesJSON fails when the scanner reads body differently from
// encoding/json, or reads a body encoding/json refuses.
func checkScanMatchesJSON(t *testing.T, body []byte) bool {
	t.Helper()
	fields, ok := scanReserveAnswer(body)
	if !ok {
		return false
	}
	var answer ReserveAnswer
	if len(body) > 0 {
		if err := json.Unmarshal(body, &answer); err != nil {
			t.Fatalf("scanner read %q, encoding/json refuses it: %v", body, err)
		}
	}
	want := reserveFields{reservationID: string(answer.ReservationID), tokenID: string(answer.TokenID),
		expireAt: answer.ExpireAt, errorCode: answer.Error}
	if fields != want {
		t.Fatalf("%q: scanner %+v, encoding/json %+v", body, fields, want)
	}
	return true
}

func TestScanReserveAnswerMatchesEncodingJSON(t *testing.T) {
	for i, sample := range reserveAnswerSamples {
		scanned := checkScanMatchesJSON(t, []byte(sample))
		// The first ten samples are plain; the rest are not.
		if want := i < 10; scanned != want {
			t.Errorf("%q: scanned %v, want %v", sample, scanned, want)
		}
	}
}

func TestScanReserveAnswerReadsTheFields(t *testing.T) {
	fields, ok := scanReserveAnswer([]byte(reserveAnswerSamples[0]))
	want := reserveFields{reservationID: "c~sku-1~17", tokenID: "17", expireAt: "2026-01-02T03:04:05.678Z"}
	if !ok || fields != want {
		t.Fatalf("got %+v %v, want %+v", fields, ok, want)
	}
	fields, ok = scanReserveAnswer([]byte(`{"reservation_id":"a","reservation_id":"b","error":"SOLD_OUT"}`))
	if !ok || fields.reservationID != "b" || fields.errorCode != "SOLD_OUT" {
		t.Fatalf("got %+v %v: the last of repeated keys wins", fields, ok)
	}
}

// TestScanReserveAnswerMutations mutates the samples at random (byte
// changes, insertions, deletions, splices) and compares the scanner with
// encoding/json on every result it accepts.
func TestScanReserveAnswerMutations(t *testing.T) {
	random := rand.New(rand.NewSource(1))
	alphabet := []byte("{}[]:,\"\\ \t\n-+.0123456789eEnulltrfasx_" + "\x00\x1f\x7f\xc3\xa9\xff")
	keys := []string{"reservation_id", "token_id", "request_id", "state", "expire_at", "status_url", "error", "detail", "Error", "xx"}
	scanned := 0
	for round := 0; round < 200_000; round++ {
		body := []byte(reserveAnswerSamples[random.Intn(len(reserveAnswerSamples))])
		for edits := 1 + random.Intn(3); edits > 0; edits-- {
			at := 0
			if len(body) > 0 {
				at = random.Intn(len(body) + 1)
			}
			switch random.Intn(4) {
			case 0:
				if at < len(body) {
					body[at] = alphabet[random.Intn(len(alphabet))]
				}
			case 1:
				body = append(body[:at], append([]byte{alphabet[random.Intn(len(alphabet))]}, body[at:]...)...)
			case 2:
				if at < len(body) {
					body = append(body[:at], body[at+1:]...)
				}
			case 3:
				insert := `"` + keys[random.Intn(len(keys))] + `":`
				if random.Intn(2) == 0 {
					insert = `,` + insert + `"v"`
				}
				body = append(body[:at], append([]byte(insert), body[at:]...)...)
			}
		}
		if checkScanMatchesJSON(t, body) {
			scanned++
		}
	}
	if scanned < 1000 {
		t.Errorf("only %d mutated bodies were plain: the test does not exercise the scanner", scanned)
	}
}

func FuzzScanReserveAnswer(f *testing.F) {
	for _, sample := range reserveAnswerSamples {
		f.Add([]byte(sample))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkScanMatchesJSON(t, body)
	})
}

func TestDecodeReserveAnswerFallsBackToEncodingJSON(t *testing.T) {
	fields, err := decodeReserveAnswer([]byte(`{"reservation_id":"a\u0062","token_id":1.5e1,"error":"x","other":[1,{"y":2}]}`))
	if err != nil || fields.reservationID != "ab" || fields.tokenID != "1.5e1" || fields.errorCode != "x" {
		t.Fatalf("got %+v %v", fields, err)
	}
	if _, err := decodeReserveAnswer([]byte(`{"reservation_id":`)); err == nil {
		t.Fatal("a cut body was read")
	}
	if _, err := decodeReserveAnswer([]byte(strings.Repeat(" ", 3))); err == nil {
		t.Fatal("a blank body was read")
	}
}
