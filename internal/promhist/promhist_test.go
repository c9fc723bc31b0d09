package promhist

import (
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"
)

// gather returns the metric families c exposes.
func gather(t *rapid.T, c prometheus.Collector) []*dto.MetricFamily {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// TestExpositionMatchesClientGolang feeds the same observations to a
// Histogram and a Vec and to client_golang's, and compares what a scrape
// gathers: buckets, count, sum, labels, name, help and type.
func TestExpositionMatchesClientGolang(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		bounds := rapid.SliceOfNDistinct(rapid.Float64Range(-10, 10), 0, 20, rapid.ID[float64]).Draw(t, "bounds")
		slices.Sort(bounds)
		opts := prometheus.HistogramOpts{Name: "x_seconds", Help: "x.", Buckets: bounds}
		if len(bounds) == 0 {
			opts.Buckets = nil // the default buckets
		}
		ours, theirs := New(opts), prometheus.NewHistogram(opts)
		ourVec, theirVec := NewVec(opts, []string{"route"}), prometheus.NewHistogramVec(opts, []string{"route"})
		routes := []string{"a", "b", "c"}
		values := rapid.SliceOf(rapid.OneOf(rapid.Float64Range(-12, 12),
			rapid.SampledFrom(append([]float64{0, math.Inf(1), math.Inf(-1)}, bounds...)))).Draw(t, "values")
		for i, v := range values {
			ours.Observe(v)
			theirs.Observe(v)
			r := routes[i%len(routes)]
			ourVec.WithLabelValues(r).Observe(v)
			theirVec.WithLabelValues(r).Observe(v)
		}
		for _, pair := range [][2]prometheus.Collector{{ours, theirs}, {ourVec, theirVec}} {
			got, want := gather(t, pair[0]), gather(t, pair[1])
			if len(got) != len(want) {
				t.Fatalf("families %d, want %d", len(got), len(want))
			}
			for i := range got {
				// Made a moment apart: both carry a creation time.
				for _, ms := range [][]*dto.Metric{got[i].Metric, want[i].Metric} {
					for _, m := range ms {
						if m.Histogram.CreatedTimestamp == nil {
							t.Fatalf("no created timestamp in %v", m)
						}
						m.Histogram.CreatedTimestamp = nil
					}
				}
				if !proto.Equal(got[i], want[i]) {
					t.Fatalf("gathered\n%v\nwant\n%v", got[i], want[i])
				}
			}
		}
	})
}

// TestConcurrentObservationsAreAllCounted observes from several goroutines
// at once (go test -race checks the adds) and expects every observation in
// the count and the sum.
func TestConcurrentObservationsAreAllCounted(t *testing.T) {
	h := New(prometheus.HistogramOpts{Name: "y", Help: "y.", Buckets: []float64{1, 2}})
	const goroutines, each = 4, 1000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for range each {
				h.Observe(float64(g))
			}
		})
	}
	wg.Wait()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(h)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	m := mfs[0].Metric[0].Histogram
	if m.GetSampleCount() != goroutines*each || m.GetSampleSum() != each*(0+1+2+3) {
		t.Fatalf("count %d sum %v", m.GetSampleCount(), m.GetSampleSum())
	}
	if b := m.Bucket; b[0].GetCumulativeCount() != 2*each || b[1].GetCumulativeCount() != 3*each {
		t.Fatalf("buckets %v", b)
	}
}

// TestWrongLabelCountPanicsAtOnce: a child with the wrong number of label
// values is refused when made, as client_golang's, not at a scrape.
func TestWrongLabelCountPanicsAtOnce(t *testing.T) {
	v := NewVec(prometheus.HistogramOpts{Name: "z", Help: "z."}, []string{"a", "b"})
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	v.WithLabelValues("only-one")
}
