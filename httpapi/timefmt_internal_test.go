package httpapi

import (
	"math/rand/v2"
	"testing"
	"time"
)

// appendMillisUTC (and formatMillis, its string) renders what time.Format
// does with rfc3339Millis, over the whole range of
// four-digit years and at the edges of seconds, days and years.
func TestAppendMillisUTCMatchesFormatMillis(t *testing.T) {
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
	cases = append(cases, 253_402_300_800_000, -62_167_219_200_001) // years 10000 and -1: the fallback
	for _, ms := range cases {
		want := time.UnixMilli(ms).UTC().Format(rfc3339Millis)
		if got := string(appendMillisUTC(nil, ms)); got != want {
			t.Fatalf("%d: %q, want %q", ms, got, want)
		}
		if got := formatMillis(ms); got != want {
			t.Fatalf("formatMillis(%d): %q, want %q", ms, got, want)
		}
	}
}
