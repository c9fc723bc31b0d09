package bench

import (
	"testing"
	"time"
)

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
