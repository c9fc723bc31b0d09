package actors_test

import (
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
)

// A quantile is its bucket's upper bound: never below the true value,
// at most 19% above it (four buckets per power of two from 4 µs).
func TestHistogramQuantiles(t *testing.T) {
	var h actors.Histogram
	if _, ok := h.Snapshot().Quantile(0.5); ok {
		t.Fatal("a quantile of no observation")
	}
	for _, d := range []time.Duration{5 * time.Microsecond, 37 * time.Microsecond, 450 * time.Microsecond,
		3 * time.Millisecond, 71 * time.Millisecond, 2 * time.Second} {
		var one actors.Histogram
		one.Observe(d)
		got, ok := one.Snapshot().Quantile(0.99)
		if !ok || got <= d || float64(got) > 1.19*float64(d)+float64(time.Microsecond) {
			t.Errorf("p99 of one %v: %v", d, got)
		}
	}
	before := h.Snapshot()
	for i := range 1000 {
		h.Observe(time.Duration(i+1) * time.Millisecond) // 1 ms .. 1 s
	}
	h.Observe(-time.Second)   // clamped into the first bucket
	h.Observe(10 * time.Hour) // into the last
	c := h.Snapshot().Sub(before)
	if c.Count() != 1002 {
		t.Fatalf("count %d", c.Count())
	}
	for q, want := range map[float64]time.Duration{0.5: 500 * time.Millisecond, 0.99: 990 * time.Millisecond} {
		got, _ := c.Quantile(q)
		if got < want || float64(got) > 1.19*float64(want) {
			t.Errorf("q%.2f: %v, want %v..+19%%", q, got, want)
		}
	}
}
