package wal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A cut keeps records 1..last byte for byte, removes the rest, and the
// reopened log appends last+1 next: in the middle of a segment, at a
// segment's boundary, of every record, and of none.
func TestCutAfter(t *testing.T) {
	for _, tc := range []struct {
		name        string
		truncate    uint64 // TruncateBefore first (0: none)
		last        uint64
		wantRemoved uint64
	}{
		{"mid-segment", 0, 57, 43},
		{"nothing after", 0, 100, 0},
		{"beyond the end", 0, 120, 0},
		{"every record", 0, 0, 100},
		{"after a truncation, down to its first record", 40, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "wal")
			opts := Options{SegmentSize: 600} // ~8 records a segment
			writeLog(t, dir, 100, opts)
			first := uint64(1)
			if tc.truncate > 0 {
				l := openLog(t, dir, opts)
				var err error
				if first, err = l.TruncateBefore(tc.truncate); err != nil {
					t.Fatal(err)
				}
				l.Close()
				tc.last, tc.wantRemoved = first-1, 101-first
			}
			logs := &captureLogger{}
			removed, err := CutAfter(dir, tc.last, logs.logger())
			if err != nil {
				t.Fatal(err)
			}
			if removed != tc.wantRemoved {
				t.Fatalf("removed %d records, want %d", removed, tc.wantRemoved)
			}
			if (removed > 0) != strings.Contains(logs.text(), "cut records after a rejoin") {
				t.Fatalf("removed %d, logged:\n%s", removed, logs.text())
			}
			l := openLog(t, dir, opts)
			defer l.Close()
			want := min(tc.last, 100)
			if l.LastIndex() != want {
				t.Fatalf("LastIndex %d after the cut, want %d", l.LastIndex(), want)
			}
			records, err := replayAll(l, first)
			if err != nil {
				t.Fatal(err)
			}
			if uint64(len(records)) != want+1-first {
				t.Fatalf("replayed %d records, want %d", len(records), want+1-first)
			}
			for _, r := range records {
				if r.typ != testType(r.index) || r.payload != string(testPayload(r.index)) {
					t.Fatalf("record %d changed by the cut", r.index)
				}
			}
			index, err := l.Append(testType(want+1), testPayload(want+1))
			if err != nil || index != want+1 {
				t.Fatalf("the next append: index %d, %v; want %d", index, err, want+1)
			}
			if err := awaitDurable(t, l, index); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A cut below the log's first record would leave a gap: refused, nothing
// removed.
func TestCutAfterBelowTheFirstRecord(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	opts := Options{SegmentSize: 600}
	writeLog(t, dir, 100, opts)
	l := openLog(t, dir, opts)
	first, err := l.TruncateBefore(50)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if _, err := CutAfter(dir, first-2, quietLogger()); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("cut below the first record: %v, want ErrOutOfRange", err)
	}
	l = openLog(t, dir, opts)
	defer l.Close()
	if l.LastIndex() != 100 {
		t.Fatalf("a refused cut changed the log: LastIndex %d", l.LastIndex())
	}
}

// memFiles is a log's segment files in memory, for CutSegments.
type memFiles struct {
	segs   []Segment
	data   map[string][]byte
	synced int // SyncDir calls
}

func (m *memFiles) Segments() ([]Segment, error)            { return m.segs, nil }
func (m *memFiles) ReadSegment(seg Segment) ([]byte, error) { return m.data[seg.Path], nil }
func (m *memFiles) RemoveSegment(seg Segment) error {
	delete(m.data, seg.Path)
	for i, s := range m.segs {
		if s.Path == seg.Path {
			m.segs = append(m.segs[:i], m.segs[i+1:]...)
			break
		}
	}
	return nil
}
func (m *memFiles) TruncateSegment(seg Segment, size int64) error {
	m.data[seg.Path] = m.data[seg.Path][:size]
	return nil
}
func (m *memFiles) SyncDir() error { m.synced++; return nil }

// CutSegments over files that are not a directory leaves the same bytes
// as CutAfter over the directory holding the same segments: one rule.
func TestCutSegmentsIsCutAfterOverAnyFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	opts := Options{SegmentSize: 600}
	writeLog(t, dir, 100, opts)
	segs, err := Segments(dir)
	if err != nil {
		t.Fatal(err)
	}
	mem := &memFiles{data: map[string][]byte{}}
	for _, seg := range segs {
		b, err := os.ReadFile(seg.Path)
		if err != nil {
			t.Fatal(err)
		}
		mem.segs = append(mem.segs, seg)
		mem.data[seg.Path] = b
	}
	logs := &captureLogger{}
	removedMem, err := CutSegments("mem", mem, 57, logs.logger())
	if err != nil {
		t.Fatal(err)
	}
	removedDir, err := CutAfter(dir, 57, logs.logger())
	if err != nil {
		t.Fatal(err)
	}
	if removedMem != 43 || removedDir != 43 {
		t.Fatalf("removed %d (memory) and %d (directory) records, want 43", removedMem, removedDir)
	}
	if mem.synced != 1 {
		t.Fatalf("%d SyncDir after removing segments, want 1", mem.synced)
	}
	after, err := Segments(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(mem.segs) {
		t.Fatalf("%d segments in the directory, %d in memory", len(after), len(mem.segs))
	}
	for i, seg := range after {
		b, err := os.ReadFile(seg.Path)
		if err != nil {
			t.Fatal(err)
		}
		if mem.segs[i].Path != seg.Path || !bytes.Equal(mem.data[seg.Path], b) {
			t.Fatalf("segment %s differs after the cut", seg.Path)
		}
	}
}
