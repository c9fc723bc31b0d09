package timefmt

import (
	"math/rand/v2"
	"testing"
	"time"
)

// AppendMillis (and Millis, its string) renders what time.Format does with
// Layout, over the whole range of four-digit years and at the edges of
// seconds, days and years.
func TestAppendMillisMatchesFormat(t *testing.T) {
	cases := []int64{0, 1, 999, 1000, 86_399_999, 951_782_400_000, 1_700_000_000_123, 253_402_300_799_999, -1, -62_167_219_200_000}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		cases = append(cases, rng.Int64N(253_402_300_800_000))
	}
	for range 100 { // runs within a day and across midnight: the cached date part
		base := rng.Int64N(253_402_300_800_000 - 10_000_000)
		for k := range int64(1000) {
			cases = append(cases, base+k*9_973)
		}
	}
	for range 100 { // runs within a second and across its end: the cached second
		base := rng.Int64N(253_402_300_800_000 - 10_000)
		for k := range int64(1000) {
			cases = append(cases, base+k*7)
		}
	}
	cases = append(cases, 253_402_300_800_000, -62_167_219_200_001) // years 10000 and -1: the fallback
	for _, ms := range cases {
		want := time.UnixMilli(ms).UTC().Format(Layout)
		if got := string(AppendMillis(nil, ms)); got != want {
			t.Fatalf("%d: %q, want %q", ms, got, want)
		}
		if got := Millis(ms); got != want {
			t.Fatalf("Millis(%d): %q, want %q", ms, got, want)
		}
	}
}

// OptionalMillis leaves a time that is not set (0) out.
func TestOptionalMillis(t *testing.T) {
	if got := OptionalMillis(0); got != "" {
		t.Fatalf("OptionalMillis(0) = %q", got)
	}
	if got := OptionalMillis(1_767_225_600_000); got != "2026-01-01T00:00:00.000Z" {
		t.Fatalf("OptionalMillis = %q", got)
	}
}

// Duration is the one canonical text of a duration of whole milliseconds:
// time.ParseDuration reads it back to the same milliseconds, and a text
// that spells the duration otherwise ("90m", "5400s", "1.5h") parses to
// a duration that renders the same.
func TestDurationRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for range 100_000 {
		ms := 1 + rng.Int64N(48*3_600_000)
		text := Duration(ms)
		d, err := time.ParseDuration(text)
		if err != nil || d != time.Duration(ms)*time.Millisecond {
			t.Fatalf("%d ms: %q parses to %v (%v)", ms, text, d, err)
		}
		other := (time.Duration(ms) * time.Millisecond).String() // "1h30m0s", Go's own spelling
		if d, err := time.ParseDuration(other); err != nil || Duration(d.Milliseconds()) != text {
			t.Fatalf("%d ms: %q renders %q, want %q", ms, other, Duration(d.Milliseconds()), text)
		}
	}
	for text, want := range map[string]string{"1.5h": "1h30m", "90m": "1h30m", "5400s": "1h30m", "0.5h": "30m", "90s": "1m30s", "1500ms": "1.5s", "24h": "24h", "1h0m0.5s": "1h0m0.5s"} {
		d, err := time.ParseDuration(text)
		if got := Duration(d.Milliseconds()); err != nil || got != want {
			t.Errorf("%q: %q (%v), want %q", text, got, err, want)
		}
	}
}

// Seconds renders what AppendMillis does, over runs within a second and
// across its end, seconds going back (rendered in place), and the edges of
// the range.
func TestSecondsMatchesAppendMillis(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var c Seconds
	check := func(ms int64) {
		t.Helper()
		if got, want := string(c.AppendMillis(nil, ms)), string(AppendMillis(nil, ms)); got != want {
			t.Fatalf("%d: %q, want %q", ms, got, want)
		}
	}
	for range 100 {
		base := rng.Int64N(253_402_300_800_000 - 10_000)
		for k := range int64(1000) {
			check(base + k*7)
			check(base + k*7 - 600_000) // an earlier second, taking turns with the later one
		}
	}
	for _, ms := range []int64{0, 999, 253_402_300_799_999, 253_402_300_800_000, -1} {
		check(ms)
	}
}
