package wal

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A range copy opens as a log holding exactly those records, durable, that
// continues after them.
func TestCopyRange(t *testing.T) {
	src := t.TempDir()
	writeLog(t, src, 200, Options{SegmentSize: 1000})
	r, err := OpenReader(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "sku", "wal") // parents created
	first, last, err := CopyRange(dst, r, 40, 120)
	if err != nil || first != 40 || last != 120 {
		t.Fatalf("CopyRange = %d, %d, %v", first, last, err)
	}
	copied, err := OpenReader(dst)
	if err != nil {
		t.Fatal(err)
	}
	checkReaderRecords(t, copied, 0, 40, 120)
	l := openLog(t, dst, Options{})
	if l.FirstIndex() != 40 || l.LastIndex() != 120 {
		t.Fatalf("opened copy: %d..%d", l.FirstIndex(), l.LastIndex())
	}
	appendRecords(t, l, 121, 121)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// from before the source's first record copies from its first.
	dst2 := filepath.Join(t.TempDir(), "wal")
	if first, last, err := CopyRange(dst2, copied, 1, 60); err != nil || first != 40 || last != 60 {
		t.Fatalf("CopyRange from before the first record = %d, %d, %v", first, last, err)
	}
	// Beyond the source's end: refused, nothing written.
	dst3 := filepath.Join(t.TempDir(), "wal")
	if _, _, err := CopyRange(dst3, r, 1, 201); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("CopyRange beyond the end: %v", err)
	}
	if _, err := os.Stat(dst3); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused copy created %s: %v", dst3, err)
	}
	// Into a directory that already holds that segment: refused.
	if _, _, err := CopyRange(dst2, r, 40, 60); !errors.Is(err, os.ErrExist) {
		t.Fatalf("CopyRange over an existing segment: %v", err)
	}
}

// An empty range gives a log with no record that continues after to.
func TestCopyRangeEmpty(t *testing.T) {
	for _, c := range []struct {
		name     string
		from, to uint64
	}{{"nil source", 1, 41}, {"from after to", 42, 41}} {
		t.Run(c.name, func(t *testing.T) {
			var src *Reader
			if c.name != "nil source" {
				dir := t.TempDir()
				writeLog(t, dir, 60, Options{})
				var err error
				if src, err = OpenReader(dir); err != nil {
					t.Fatal(err)
				}
			}
			dst := filepath.Join(t.TempDir(), "wal")
			first, last, err := CopyRange(dst, src, c.from, c.to)
			if err != nil || first != 42 || last != 41 {
				t.Fatalf("CopyRange = %d, %d, %v", first, last, err)
			}
			l := openLog(t, dst, Options{})
			defer l.Close()
			if l.FirstIndex() != 0 || l.LastIndex() != 41 {
				t.Fatalf("empty copy opens as %d..%d", l.FirstIndex(), l.LastIndex())
			}
			index, err := l.Append(1, []byte("next"))
			if err != nil || index != 42 {
				t.Fatalf("Append on the empty copy = %d, %v", index, err)
			}
		})
	}
}
