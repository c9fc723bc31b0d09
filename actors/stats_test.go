package actors

import (
	"math"
	"testing"
	"time"
)

// TestRateDecaysToZero: the consumer rate follows the processed counter
// and, once the SKU is idle, reaches exactly 0 instead of decaying through
// denormal values forever.
func TestRateDecaysToZero(t *testing.T) {
	var s SKU
	var r rateTracker
	at := time.UnixMilli(t0)
	r.tick(&s, at)
	s.processed.Add(1000)
	at = at.Add(time.Second)
	r.tick(&s, at)
	if got := math.Float64frombits(s.rateBits.Load()); got != 500 {
		t.Fatalf("rate after 1000 messages in 1 s: %v, want 500 (half the EWMA)", got)
	}
	for i := range 60 {
		at = at.Add(100 * time.Millisecond)
		r.tick(&s, at)
		if got := math.Float64frombits(s.rateBits.Load()); got == 0 {
			if i < 5 {
				t.Fatalf("rate 0 after only %d idle ticks", i+1)
			}
			return
		}
	}
	t.Fatalf("rate after 60 idle ticks: %v, want 0", math.Float64frombits(s.rateBits.Load()))
}
