package prometheus

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/template"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// The rules are evaluated with Prometheus's own query engine (promql) and
// template expander (template), over series held in memory. Prometheus's
// rules package, which holds the alert's lifecycle, is not used: it brings
// the notifier and its cloud service discovery (about 400 packages more,
// minutes of a cold build in make test); an alert's lifecycle is three
// documented rules, kept here as Prometheus states them (firing once its
// expression has returned it for `for`; resolved once it does not).

// sampleInterval is the spacing of the samples of a series notation.
const sampleInterval = 30 * time.Second

// alert is one active alert of a rule: its labels, when it became active,
// and whether it fires.
type alert struct {
	labels      labels.Labels
	annotations map[string]string
	activeAt    time.Time
	firing      bool
}

// evalAlert evaluates rule r every evaluationInterval from time 0 to at
// over series (one series a line in promql's series notation, e.g.
// `m{l="v"} 0 1 stale` or `m 0+1x10`, a sample every sampleInterval from
// time 0) and returns the alerts active then.
func evalAlert(t *testing.T, r *rulefmt.Rule, series string, at time.Duration) []*alert {
	t.Helper()
	db := loadSeries(t, series)
	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 1_000_000, Timeout: 10 * time.Second, LookbackDelta: 5 * time.Minute, Parser: stockParser})
	t.Cleanup(func() { engine.Close() })
	query := func(ctx context.Context, q string, ts time.Time) (promql.Vector, error) {
		qry, err := engine.NewInstantQuery(ctx, db, nil, q, ts)
		if err != nil {
			return nil, err
		}
		defer qry.Close()
		res := qry.Exec(ctx)
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Vector()
	}
	active := map[uint64]*alert{}
	for step := time.Duration(0); step <= at; step += evaluationInterval {
		ts := time.Unix(0, 0).Add(step)
		vec, err := query(context.Background(), r.Expr, ts)
		if err != nil {
			t.Fatalf("%s at %s: %v", r.Alert, step, err)
		}
		seen := map[uint64]bool{}
		for _, s := range vec {
			b := labels.NewBuilder(s.Metric).Del(model.MetricNameLabel)
			for name, v := range r.Labels {
				b.Set(name, v)
			}
			b.Set(model.AlertNameLabel, r.Alert)
			lset := b.Labels()
			h := lset.Hash()
			seen[h] = true
			a := active[h]
			if a == nil {
				a = &alert{labels: lset, activeAt: ts}
				active[h] = a
			}
			a.firing = ts.Sub(a.activeAt) >= time.Duration(r.For)
			a.annotations = expandAnnotations(t, r, s, ts, query)
		}
		for h := range active {
			if !seen[h] {
				delete(active, h) // resolved
			}
		}
	}
	var out []*alert
	for _, a := range active {
		out = append(out, a)
	}
	return out
}

// expandAnnotations expands r's annotations for sample s at ts as
// Prometheus does: its text/template expander, with $labels (the
// sample's labels), $externalLabels, $externalURL and $value defined.
func expandAnnotations(t *testing.T, r *rulefmt.Rule, s promql.Sample, ts time.Time, query template.QueryFunc) map[string]string {
	t.Helper()
	data := template.AlertTemplateData(s.Metric.Map(), nil, "", s)
	defs := "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"
	out := map[string]string{}
	for name, text := range r.Annotations {
		e := template.NewTemplateExpander(context.Background(), defs+text, "__alert_"+r.Alert, data,
			model.TimeFromUnixNano(ts.UnixNano()), query, nil, nil)
		v, err := e.Expand()
		if err != nil {
			t.Errorf("%s: annotation %s does not expand: %v", r.Alert, name, err)
		}
		out[name] = v
	}
	return out
}

// loadSeries parses series (see evalAlert) into an in-memory storage.
func loadSeries(t *testing.T, series string) memStorage {
	t.Helper()
	var db memStorage
	for _, line := range strings.Split(strings.TrimSpace(series), "\n") {
		lset, values, err := stockParser.ParseSeriesDesc(strings.TrimSpace(line))
		if err != nil {
			t.Fatalf("series %q: %v", line, err)
		}
		var samples []chunks.Sample
		for i, v := range values {
			if v.Omitted {
				continue
			}
			if v.Histogram != nil {
				t.Fatalf("series %q: histogram samples are not loaded here", line)
			}
			samples = append(samples, floatSample{t: (time.Duration(i) * sampleInterval).Milliseconds(), f: v.Value})
		}
		db = append(db, storage.NewListSeries(lset, samples))
	}
	return db
}

// floatSample is one float sample of a loaded series.
type floatSample struct {
	t int64
	f float64
}

func (s floatSample) T() int64                      { return s.t }
func (s floatSample) ST() int64                     { return 0 }
func (s floatSample) F() float64                    { return s.f }
func (s floatSample) H() *histogram.Histogram       { return nil }
func (s floatSample) FH() *histogram.FloatHistogram { return nil }
func (s floatSample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s floatSample) Copy() chunks.Sample           { return s }

// memStorage is a storage.Queryable of series held in memory: every
// querier sees them all, whatever its time range (the engine cuts the
// samples to the range it reads).
type memStorage []storage.Series

func (db memStorage) Querier(mint, maxt int64) (storage.Querier, error) { return db, nil }

func (db memStorage) Select(_ context.Context, _ bool, _ *storage.SelectHints, matchers ...*labels.Matcher) storage.SeriesSet {
	var out []storage.Series
	for _, s := range db {
		lset := s.Labels()
		match := true
		for _, m := range matchers {
			if !m.Matches(lset.Get(m.Name)) {
				match = false
				break
			}
		}
		if match {
			out = append(out, s)
		}
	}
	return &seriesSet{series: out, i: -1}
}

func (db memStorage) LabelValues(context.Context, string, *storage.LabelHints, ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return nil, nil, fmt.Errorf("memStorage: label values are not served")
}

func (db memStorage) LabelNames(context.Context, *storage.LabelHints, ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return nil, nil, fmt.Errorf("memStorage: label names are not served")
}

func (db memStorage) Close() error { return nil }

// seriesSet iterates over the series a Select found.
type seriesSet struct {
	series []storage.Series
	i      int
}

func (s *seriesSet) Next() bool                        { s.i++; return s.i < len(s.series) }
func (s *seriesSet) At() storage.Series                { return s.series[s.i] }
func (s *seriesSet) Err() error                        { return nil }
func (s *seriesSet) Warnings() annotations.Annotations { return nil }
