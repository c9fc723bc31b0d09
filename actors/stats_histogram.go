package actors

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// Histogram counts durations in log-scaled buckets with atomic adds: any
// number of goroutines observe without a lock or an allocation, and a
// reader copies the counts (Snapshot) and subtracts two copies to get the
// distribution of an interval. It is what per-SKU latency figures (reserve
// p50/p99 in httpapi, fsync p99 here) cost: 768 bytes, where a Prometheus
// histogram per SKU would be a series per bucket.
//
// Buckets: four per power of two of microseconds from 4 µs up (one bucket
// below 4 µs); a value above ~16.7 s counts in the last.
// A quantile is reported as its bucket's upper bound: at most 19% high
// (the HdrHistogram idea with 2 significant bits).
type Histogram struct {
	buckets [HistogramBuckets]atomic.Uint64
}

// HistogramBuckets is the number of buckets of a Histogram: 24 powers of
// two of microseconds, four buckets each.
const HistogramBuckets = 24 * histogramSubBuckets

const histogramSubBuckets = 4

// HistogramCounts is a copy of a Histogram's buckets.
type HistogramCounts [HistogramBuckets]uint64

// Observe counts one duration.
func (h *Histogram) Observe(d time.Duration) {
	h.buckets[histogramBucket(d)].Add(1)
}

// Snapshot copies the counts (each bucket read atomically; observations
// made during the copy may be in it or not).
func (h *Histogram) Snapshot() HistogramCounts {
	var c HistogramCounts
	for i := range h.buckets {
		c[i] = h.buckets[i].Load()
	}
	return c
}

// histogramBucket returns the bucket of d.
func histogramBucket(d time.Duration) int {
	us := uint64(max(d, 0) / time.Microsecond)
	if us < 4 {
		return 0 // [0, 4 µs): the buckets of 1 and 2 µs stay empty
	}
	octave := bits.Len64(us) - 1                           // us in [2^octave, 2^(octave+1)), octave >= 2
	sub := int(us>>(octave-2)) & (histogramSubBuckets - 1) // the two bits after the leading one
	return min(octave*histogramSubBuckets+sub, HistogramBuckets-1)
}

// histogramUpper returns the upper bound of bucket i (exclusive).
func histogramUpper(i int) time.Duration {
	octave, sub := i/histogramSubBuckets, i%histogramSubBuckets
	if octave < 2 {
		return 4 * time.Microsecond
	}
	base := uint64(1) << octave
	return time.Duration(base+base*uint64(sub+1)/histogramSubBuckets) * time.Microsecond
}

// Sub returns the counts observed after earlier was copied: c - earlier,
// bucket by bucket (earlier must be an older copy of the same Histogram).
func (c HistogramCounts) Sub(earlier HistogramCounts) HistogramCounts {
	for i := range c {
		c[i] -= earlier[i]
	}
	return c
}

// Count returns the number of observations.
func (c HistogramCounts) Count() uint64 {
	var n uint64
	for _, v := range c {
		n += v
	}
	return n
}

// Quantile returns the upper bound of the bucket holding the q-quantile
// (0 < q <= 1), and false when there is no observation.
func (c HistogramCounts) Quantile(q float64) (time.Duration, bool) {
	n := c.Count()
	if n == 0 {
		return 0, false
	}
	rank := uint64(q*float64(n) + 0.5)
	rank = min(max(rank, 1), n)
	var seen uint64
	for i, v := range c {
		seen += v
		if seen >= rank {
			return histogramUpper(i), true
		}
	}
	return histogramUpper(HistogramBuckets - 1), true
}
