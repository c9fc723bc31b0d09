package feed

import (
	"testing"
	"time"
)

// The retention keeps the newest records and the young ones, never more
// than its bounds allow to be held back.
func TestRetentionCut(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	none := NewRetention(0, 0)
	if got := none.Cut(500, 1000, 1000, t0, time.Time{}); got != 500 {
		t.Fatalf("no retention: cut %d, want 500", got)
	}
	byCount := NewRetention(100, 0)
	if got := byCount.Cut(950, 1000, 1000, t0, time.Time{}); got != 901 {
		t.Fatalf("100 records kept: cut %d, want 901", got)
	}
	if got := byCount.Cut(50, 1000, 1000, t0, time.Time{}); got != 50 {
		t.Fatalf("the snapshots need more: cut %d, want 50", got)
	}
	if got := byCount.Cut(40, 60, 60, t0, time.Time{}); got != 1 {
		t.Fatalf("fewer records than retained: cut %d, want 1 (none)", got)
	}
	byAge := NewRetention(0, time.Minute)
	if got := byAge.Cut(500, 1000, 1000, t0, time.Time{}); got != 1 {
		t.Fatalf("no record known to be a minute old: cut %d, want 1", got)
	}
	if got := byAge.Cut(1500, 2000, 2000, t0.Add(30*time.Second), time.Time{}); got != 1 {
		t.Fatalf("30 s later: cut %d, want 1", got)
	}
	if got := byAge.Cut(2500, 3000, 3000, t0.Add(61*time.Second), time.Time{}); got != 1001 {
		t.Fatalf("a minute after the first mark: cut %d, want 1001", got)
	}
	if got := byAge.Cut(3500, 4000, 4000, t0.Add(10*time.Minute), time.Time{}); got != 3001 {
		t.Fatalf("ten minutes on: cut %d, want 3001", got)
	}
	// A clock that went back does not shorten the hold: a mark counts
	// from the last record's decision time when that is later.
	back := NewRetention(0, time.Minute)
	back.Cut(10, 100, 100, t0.Add(-time.Hour), t0) // record 100 was decided at t0, an hour "ahead"
	if got := back.Cut(50, 200, 200, t0.Add(-58*time.Minute), t0); got != 1 {
		t.Fatalf("two minutes after the clock went back: cut %d, want 1 (record 100 is not a minute old)", got)
	}
	if got := back.Cut(250, 300, 300, t0.Add(2*time.Minute), t0.Add(2*time.Minute)); got != 201 {
		t.Fatalf("two minutes after record 200's decision: cut %d, want 201", got)
	}
	capped := NewRetention(1<<40, 1000*time.Hour)
	if capped.records != MaxRetainRecords || capped.age != MaxRetainAge {
		t.Fatalf("unbounded retention: %+v", capped)
	}
	for i := 0; i < 3*retainMarks; i++ {
		capped.Cut(1, 1, uint64(i), t0, time.Time{})
	}
	if len(capped.marks) != retainMarks {
		t.Fatalf("%d marks kept, at most %d", len(capped.marks), retainMarks)
	}
}
