package bench

import (
	"math"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram bounds, in microseconds. A latency above the highest trackable
// value is clamped to it (and so shows as the max), never dropped.
const (
	latencyLowestMicros       = 1
	latencyHighestMicros      = 120 * 1000 * 1000 // 120 s
	latencySignificantFigures = 3
)

// curveQuantiles are the percentiles drawn in the report's latency chart.
var curveQuantiles = []float64{0, 10, 20, 30, 40, 50, 60, 70, 75, 80, 85, 90, 95, 97, 98, 99, 99.5, 99.9, 99.95, 99.99, 99.999, 100}

// LatencySummary is the percentile summary of one histogram, in milliseconds.
type LatencySummary struct {
	// Count is the number of recorded values.
	Count int64 `json:"count"`
	// P50 is the median in ms.
	P50 float64 `json:"p50"`
	// P90 is the 90th percentile in ms.
	P90 float64 `json:"p90"`
	// P99 is the 99th percentile in ms.
	P99 float64 `json:"p99"`
	// P999 is the 99.9th percentile in ms.
	P999 float64 `json:"p999"`
	// Max is the largest value in ms.
	Max float64 `json:"max"`
	// Mean is the arithmetic mean in ms.
	Mean float64 `json:"mean"`
}

// PercentilePoint is one point of a latency distribution curve.
type PercentilePoint struct {
	// Percentile is in [0, 100].
	Percentile float64 `json:"percentile"`
	// LatencyMS is the latency at that percentile in ms.
	LatencyMS float64 `json:"latency_ms"`
}

// newLatencyHistogram returns an empty histogram with the package's bounds.
func newLatencyHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(latencyLowestMicros, latencyHighestMicros, latencySignificantFigures)
}

// recordLatency adds one duration to h, clamped to the histogram's range.
func recordLatency(h *hdrhistogram.Histogram, d time.Duration) {
	micros := d.Microseconds()
	if micros < latencyLowestMicros {
		micros = latencyLowestMicros
	}
	if micros > latencyHighestMicros {
		micros = latencyHighestMicros
	}
	// The value is inside the range, so RecordValue cannot fail.
	_ = h.RecordValue(micros)
}

// microsToMS converts a histogram value to milliseconds with µs precision.
func microsToMS(micros int64) float64 {
	return float64(micros) / 1000
}

// Summarize returns the percentile summary of h (zero when h is nil or empty).
func Summarize(h *hdrhistogram.Histogram) LatencySummary {
	if h == nil || h.TotalCount() == 0 {
		return LatencySummary{}
	}
	return LatencySummary{
		Count: h.TotalCount(),
		P50:   microsToMS(h.ValueAtQuantile(50)),
		P90:   microsToMS(h.ValueAtQuantile(90)),
		P99:   microsToMS(h.ValueAtQuantile(99)),
		P999:  microsToMS(h.ValueAtQuantile(99.9)),
		Max:   microsToMS(h.Max()),
		Mean:  math.Round(h.Mean()) / 1000,
	}
}

// Curve returns the latency at each of the report's percentiles.
func Curve(h *hdrhistogram.Histogram) []PercentilePoint {
	if h == nil || h.TotalCount() == 0 {
		return nil
	}
	points := make([]PercentilePoint, 0, len(curveQuantiles))
	for _, q := range curveQuantiles {
		value := h.ValueAtQuantile(q)
		if q == 100 {
			value = h.Max()
		}
		points = append(points, PercentilePoint{Percentile: q, LatencyMS: microsToMS(value)})
	}
	return points
}

// LatencyRecorder collects latencies per outcome into HDR histograms. It is
// split into stripes, each with its own lock, so that hundreds of workers do
// not queue on one mutex; a worker always records into the same stripe.
type LatencyRecorder struct {
	stripes []latencyStripe
}

type latencyStripe struct {
	mu        sync.Mutex
	byOutcome [OutcomeCount]*hdrhistogram.Histogram
}

// NewLatencyRecorder returns a recorder with the given number of stripes
// (at least 1). Histograms are allocated on first use.
func NewLatencyRecorder(stripes int) *LatencyRecorder {
	if stripes < 1 {
		stripes = 1
	}
	return &LatencyRecorder{stripes: make([]latencyStripe, stripes)}
}

// Record adds one latency for the outcome; worker selects the stripe.
func (r *LatencyRecorder) Record(worker int, outcome Outcome, d time.Duration) {
	if outcome >= OutcomeCount {
		outcome = OutcomeError
	}
	stripe := &r.stripes[worker%len(r.stripes)]
	stripe.mu.Lock()
	h := stripe.byOutcome[outcome]
	if h == nil {
		h = newLatencyHistogram()
		stripe.byOutcome[outcome] = h
	}
	recordLatency(h, d)
	stripe.mu.Unlock()
}

// LatencySet is a merged view: one histogram per outcome plus the overall one.
type LatencySet struct {
	// Overall holds every recorded latency.
	Overall *hdrhistogram.Histogram
	// ByOutcome holds the latencies of one outcome; nil when none was recorded.
	ByOutcome [OutcomeCount]*hdrhistogram.Histogram
}

// Merge returns the merged histograms. It may run while workers still record;
// values recorded during the merge may or may not be included.
func (r *LatencyRecorder) Merge() LatencySet {
	set := LatencySet{Overall: newLatencyHistogram()}
	for i := range r.stripes {
		stripe := &r.stripes[i]
		stripe.mu.Lock()
		for outcome, h := range stripe.byOutcome {
			if h == nil {
				continue
			}
			if set.ByOutcome[outcome] == nil {
				set.ByOutcome[outcome] = newLatencyHistogram()
			}
			set.ByOutcome[outcome].Merge(h)
			set.Overall.Merge(h)
		}
		stripe.mu.Unlock()
	}
	return set
}

// Summaries returns the summary per outcome name, for outcomes that occurred.
func (s LatencySet) Summaries() map[string]LatencySummary {
	summaries := make(map[string]LatencySummary)
	for outcome, h := range s.ByOutcome {
		if h != nil && h.TotalCount() > 0 {
			summaries[Outcome(outcome).String()] = Summarize(h)
		}
	}
	return summaries
}

// Curves returns the distribution curve overall (key "all") and per outcome.
func (s LatencySet) Curves() map[string][]PercentilePoint {
	curves := map[string][]PercentilePoint{"all": Curve(s.Overall)}
	for outcome, h := range s.ByOutcome {
		if h != nil && h.TotalCount() > 0 {
			curves[Outcome(outcome).String()] = Curve(h)
		}
	}
	return curves
}
