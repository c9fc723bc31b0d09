// Package promhist is a Prometheus classic histogram for the metrics
// observed on every request or group commit: an observation is a search
// of the bucket bounds and two atomic adds, where client_golang's
// Histogram also keeps hot and cold copies of its counts for consistent
// scrapes (and native buckets, when asked for). A scrape reads the
// buckets and the sum one after the other, so an observation made during
// it may be in the buckets and not yet in the sum; the count is the
// buckets' total, so the exposition's count and +Inf bucket always agree.
// Its exposition is client_golang's for the same observations
// (TestExpositionMatchesClientGolang). Histograms observed rarely keep
// client_golang's.
package promhist

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Histogram is one series: New makes a Collector of it, a Vec its children.
type Histogram struct {
	desc   *prometheus.Desc
	labels []string
	bounds []float64
	// counts[i] counts the observations in (bounds[i-1], bounds[i]];
	// the last, those above every bound.
	counts  []atomic.Uint64
	sum     atomic.Uint64 // float64 bits
	created time.Time     // a scrape in protobuf carries it, as client_golang's
}

// New returns a histogram of opts' name, help and buckets (the default
// buckets when none are given). It panics on buckets that are not
// strictly increasing, as client_golang's does.
func New(opts prometheus.HistogramOpts) *Histogram {
	return newHistogram(desc(opts, nil), bucketsOf(opts), nil)
}

func desc(opts prometheus.HistogramOpts, labelNames []string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(opts.Namespace, opts.Subsystem, opts.Name),
		opts.Help, labelNames, opts.ConstLabels)
}

func bucketsOf(opts prometheus.HistogramOpts) []float64 {
	b := opts.Buckets
	if len(b) == 0 {
		b = prometheus.DefBuckets
	}
	if math.IsInf(b[len(b)-1], +1) {
		b = b[:len(b)-1] // +Inf is the count
	}
	for i := 1; i < len(b); i++ {
		if !(b[i-1] < b[i]) {
			panic("promhist: buckets not in strictly increasing order")
		}
	}
	return slices.Clone(b)
}

func newHistogram(d *prometheus.Desc, bounds []float64, labels []string) *Histogram {
	return &Histogram{desc: d, labels: labels, bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1),
		created: time.Now()}
}

// Observe counts v in its bucket (the first bound at or above it) and adds
// it to the sum.
func (h *Histogram) Observe(v float64) {
	lo, hi := 0, len(h.bounds) // the bucket is in [lo, hi]
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if v <= h.bounds[mid] {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	h.counts[lo].Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// Describe implements prometheus.Collector.
func (h *Histogram) Describe(ch chan<- *prometheus.Desc) { ch <- h.desc }

// Collect implements prometheus.Collector.
func (h *Histogram) Collect(ch chan<- prometheus.Metric) { ch <- h.metric() }

// metric reads the histogram as client_golang exposes one: cumulative
// counts per bound.
func (h *Histogram) metric() prometheus.Metric {
	sum := math.Float64frombits(h.sum.Load())
	cumulative := make(map[float64]uint64, len(h.bounds))
	var n uint64
	for i := range h.counts {
		n += h.counts[i].Load()
		if i < len(h.bounds) {
			cumulative[h.bounds[i]] = n
		}
	}
	return prometheus.MustNewConstHistogramWithCreatedTimestamp(h.desc, n, sum, cumulative, h.created, h.labels...)
}

// Vec is a family of histograms told apart by label values, as
// client_golang's HistogramVec; callers keep the children they observe
// (WithLabelValues takes a lock).
type Vec struct {
	desc   *prometheus.Desc
	bounds []float64
	mu     sync.Mutex
	kids   map[string]*Histogram // by the label values joined with 0xff
	order  []*Histogram          // in the order made
}

// NewVec returns a family of histograms of opts with the label names.
func NewVec(opts prometheus.HistogramOpts, labelNames []string) *Vec {
	return &Vec{desc: desc(opts, labelNames), bounds: bucketsOf(opts), kids: make(map[string]*Histogram)}
}

// WithLabelValues returns the histogram of the label values, made on first
// use. It panics when their number is not the label names', as
// client_golang's does.
func (v *Vec) WithLabelValues(values ...string) *Histogram {
	key := ""
	for i, s := range values {
		if i > 0 {
			key += "\xff"
		}
		key += s
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if h, ok := v.kids[key]; ok {
		return h
	}
	h := newHistogram(v.desc, v.bounds, slices.Clone(values))
	// The Desc checks the number of label values when the metric is
	// made: check it now, not at the first scrape.
	_ = h.metric()
	v.kids[key] = h
	v.order = append(v.order, h)
	return h
}

// Describe implements prometheus.Collector.
func (v *Vec) Describe(ch chan<- *prometheus.Desc) { ch <- v.desc }

// Collect implements prometheus.Collector.
func (v *Vec) Collect(ch chan<- prometheus.Metric) {
	v.mu.Lock()
	kids := slices.Clone(v.order)
	v.mu.Unlock()
	for _, h := range kids {
		ch <- h.metric()
	}
}
