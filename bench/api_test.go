package bench

import (
	"encoding/json"
	"testing"
	"time"
)

func TestFlexibleIDReadsStringsAndNumbers(t *testing.T) {
	var answer ReserveAnswer
	if err := json.Unmarshal([]byte(`{"reservation_id":"c~s~1","token_id":17}`), &answer); err != nil {
		t.Fatal(err)
	}
	if answer.ReservationID != "c~s~1" || answer.TokenID != "17" {
		t.Fatalf("got %+v", answer)
	}
	if err := json.Unmarshal([]byte(`{"token_id":"t-9"}`), &answer); err != nil || answer.TokenID != "t-9" {
		t.Fatalf("string token: %+v %v", answer, err)
	}
	if err := json.Unmarshal([]byte(`{"token_id":[1]}`), &answer); err == nil {
		t.Fatal("an array was taken for an id")
	}
}

func TestClassifyReserveFollowsTheContract(t *testing.T) {
	cases := []struct {
		status int
		code   string
		want   Outcome
	}{
		{202, "", OutcomeAccepted},
		{409, "SOLD_OUT", OutcomeSoldOut},
		{409, "ALREADY_PURCHASED", OutcomeAlreadyPurchased},
		{409, "SOMETHING_ELSE", OutcomeError},
		{422, "REQUEST_ID_REUSED", OutcomeRequestIDReused},
		{403, "NOT_STARTED", OutcomeNotStarted},
		{403, "ENDED", OutcomeEnded},
		{429, "QUEUE_FULL", OutcomeQueueFull},
		{503, "PAUSED", OutcomePaused},
		{503, "UNAVAILABLE", OutcomeUnavailable},
		{504, "RESULT_UNKNOWN", OutcomeResultUnknown},
		{400, "BAD_REQUEST", OutcomeBadRequest},
		{500, "", OutcomeError},
		{200, "", OutcomeError},
	}
	for _, c := range cases {
		if got := ClassifyReserve(c.status, c.code); got != c.want {
			t.Errorf("%d %s: %s, want %s", c.status, c.code, got, c.want)
		}
	}
}

func TestParseRefundsReadsArraysAndWrappers(t *testing.T) {
	for _, body := range []string{
		`[{"reservation_id":"a"},{"reservation_id":"b"}]`,
		`{"refunds":[{"reservation_id":"a","payment_id":"p"},{"reservation_id":"b"}]}`,
		`["a","b"]`,
	} {
		ids, err := parseRefunds([]byte(body))
		if err != nil || len(ids) != 2 || ids[0] != "a" || ids[1] != "b" {
			t.Errorf("%s: %v %v", body, ids, err)
		}
	}
}

func TestCheckLoopbackRefusesOtherHosts(t *testing.T) {
	for _, host := range []string{"127.0.0.1", "127.3.4.5", "::1", "localhost"} {
		if err := CheckLoopback(host); err != nil {
			t.Errorf("%s refused: %v", host, err)
		}
	}
	for _, host := range []string{"10.0.0.1", "192.168.1.1", "8.8.8.8", "example.com", ""} {
		if err := CheckLoopback(host); err == nil {
			t.Errorf("%s accepted", host)
		}
	}
}

func TestFormatTimeWritesTheAPIFormat(t *testing.T) {
	at := time.Date(2030, 1, 1, 13, 0, 0, 123456789, time.FixedZone("CET", 3600))
	if got := FormatTime(at); got != "2030-01-01T12:00:00.123Z" {
		t.Fatalf("FormatTime: %s", got)
	}
	for text, want := range map[string]time.Time{
		"2030-01-01T12:00:00.123Z":            at.Truncate(time.Millisecond),
		"2030-01-01T12:00:00Z":                at.Truncate(time.Second),
		"2030-01-01T13:00:00.123456789+01:00": at,
	} {
		if got, err := ParseTime(text); err != nil || !got.Equal(want) {
			t.Errorf("ParseTime(%s): %v %v, want %v", text, got, err, want)
		}
	}
}
