package wal

import (
	"strings"
	"testing"
)

func TestTruncationPoint(t *testing.T) {
	for _, c := range []struct {
		starts      []uint64
		need, first uint64
		want        uint64
	}{
		{[]uint64{1}, 100, 1, 0},            // one segment: nothing to cut
		{[]uint64{1, 50, 90}, 100, 1, 89},   // cut at the last record of the second segment
		{[]uint64{1, 50, 90}, 60, 1, 49},    // the third segment is still needed
		{[]uint64{1, 50, 90}, 49, 1, 49},    // exactly at the need
		{[]uint64{1, 50, 90}, 48, 1, 0},     // not a whole segment yet
		{[]uint64{49, 50, 90}, 100, 49, 89}, // after an earlier cut
		{[]uint64{89, 90, 200}, 150, 89, 0}, // already cut there
		{[]uint64{89, 90, 200, 300}, 400, 89, 299},
	} {
		if got := truncationPoint(c.starts, c.need, c.first); got != c.want {
			t.Errorf("truncationPoint(%v, %d, %d) = %d, want %d", c.starts, c.need, c.first, got, c.want)
		}
	}
}

// TruncateBefore cuts a segmented log at the last record of an older
// segment, never past need, and keeps records until a whole segment is
// covered.
func TestTruncateBeforePicksSegmentBoundary(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{SegmentSize: 1000})
	appendRecords(t, l, 1, 300)
	if err := awaitDurable(t, l, 300); err != nil {
		t.Fatal(err)
	}
	segs, err := Segments(dir)
	if err != nil || len(segs) < 4 {
		t.Fatalf("segments %v, %v", segs, err)
	}
	// Not yet a whole segment below need: nothing is cut.
	if cut, err := l.TruncateBefore(segs[1].FirstIndex - 2); err != nil || cut != 0 || l.FirstIndex() != 1 {
		t.Fatalf("TruncateBefore inside the first segment = %d, %v; first %d", cut, err, l.FirstIndex())
	}
	// need inside the third segment: cut at the last record of the second.
	need := segs[2].FirstIndex + 3
	want := segs[2].FirstIndex - 1
	cut, err := l.TruncateBefore(need)
	if err != nil || cut != want || l.FirstIndex() != want {
		t.Fatalf("TruncateBefore(%d) = %d, %v; first %d, want %d", need, cut, err, l.FirstIndex(), want)
	}
	checkRecords(t, l, want, 300)
	// Again with the same need: already cut there.
	if cut, err := l.TruncateBefore(need); err != nil || cut != 0 {
		t.Fatalf("TruncateBefore again = %d, %v", cut, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, Options{SegmentSize: 1000})
	defer l.Close()
	checkRecords(t, l, want, 300)
}

// A Store without segments is cut exactly at need.
func TestTruncateBeforeWithoutSegments(t *testing.T) {
	store := newMemStore(nil)
	l := openLog(t, t.TempDir(), Options{OpenStore: func(string, StoreOptions) (Store, error) { return store, nil }})
	defer l.Close()
	appendRecords(t, l, 1, 20)
	if err := awaitDurable(t, l, 20); err != nil {
		t.Fatal(err)
	}
	if cut, err := l.TruncateBefore(15); err != nil || cut != 15 || l.FirstIndex() != 15 {
		t.Fatalf("TruncateBefore(15) = %d, %v; first %d", cut, err, l.FirstIndex())
	}
	if _, err := l.TruncateBefore(30); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Fatalf("TruncateBefore beyond the durable records: %v", err)
	}
}
