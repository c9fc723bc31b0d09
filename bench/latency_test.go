package bench

import (
	"testing"
	"time"
)

func TestSummarizeGivesPercentilesInMilliseconds(t *testing.T) {
	recorder := NewLatencyRecorder(4)
	for i := 1; i <= 10_000; i++ {
		outcome := OutcomeSoldOut
		if i%10 == 0 {
			outcome = OutcomeAccepted
		}
		recorder.Record(i, outcome, time.Duration(i)*time.Microsecond)
	}
	set := recorder.Merge()
	summary := Summarize(set.Overall)
	checks := []struct {
		name      string
		got, want float64
	}{
		{"p50", summary.P50, 5.0},
		{"p90", summary.P90, 9.0},
		{"p99", summary.P99, 9.9},
		{"p999", summary.P999, 9.99},
		{"max", summary.Max, 10.0},
		{"mean", summary.Mean, 5.0},
	}
	for _, check := range checks {
		if !within(check.got, check.want, 0.002) {
			t.Errorf("%s = %.4f ms, want %.4f (±0.2%%)", check.name, check.got, check.want)
		}
	}
	if summary.Count != 10_000 {
		t.Errorf("count %d", summary.Count)
	}
	byOutcome := set.Summaries()
	if byOutcome["accepted"].Count != 1000 || byOutcome["sold_out"].Count != 9000 {
		t.Errorf("per outcome: %+v", byOutcome)
	}
	if _, ok := byOutcome["error"]; ok {
		t.Errorf("an outcome that never happened has a summary")
	}
	curve := Curve(set.Overall)
	if len(curve) != len(curveQuantiles) || curve[len(curve)-1].LatencyMS != summary.Max {
		t.Errorf("curve %v", curve)
	}
}

func TestLatencyOutsideTheRangeIsClampedNotLost(t *testing.T) {
	recorder := NewLatencyRecorder(1)
	recorder.Record(0, OutcomeError, 10*time.Minute)
	recorder.Record(0, OutcomeError, 0)
	summary := Summarize(recorder.Merge().Overall)
	if summary.Count != 2 {
		t.Fatalf("count %d, want 2", summary.Count)
	}
	if !within(summary.Max, 120_000, 0.002) {
		t.Errorf("max %.1f ms, want the 120 s ceiling", summary.Max)
	}
	if Summarize(nil) != (LatencySummary{}) {
		t.Errorf("nil histogram has a summary")
	}
}
