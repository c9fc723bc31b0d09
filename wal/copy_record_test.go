package wal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// frameTap is a Shipper that keeps a copy of every frame shipped.
type frameTap struct {
	mu     sync.Mutex
	frames [][]byte
}

func (f *frameTap) Ship(b *Batch) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range b.Len() {
		f.frames = append(f.frames, bytes.Clone(b.Frame(i)))
	}
}

// A standby that appends the frames its primary shipped, in order, holds
// the same bytes in the same segment files; a frame out of order or
// damaged is refused and appends nothing.
func TestAppendCopyMakesTheSameLog(t *testing.T) {
	root := t.TempDir()
	tap := &frameTap{}
	opts := Options{SegmentSize: 700}
	primary := openLog(t, filepath.Join(root, "primary"), Options{SegmentSize: 700, Shipper: tap})
	appendRecords(t, primary, 1, 60)
	if err := awaitDurable(t, primary, 60); err != nil {
		t.Fatal(err)
	}
	primary.Close()
	if len(tap.frames) != 60 {
		t.Fatalf("%d frames shipped, want 60", len(tap.frames))
	}

	standby := openLog(t, filepath.Join(root, "standby"), opts)
	if _, err := standby.AppendCopy(tap.frames[1]); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("record 2 first: %v, want ErrOutOfRange", err)
	}
	bad := bytes.Clone(tap.frames[0])
	bad[len(bad)-1] ^= 1
	if _, err := standby.AppendCopy(bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a damaged frame: %v, want ErrCorrupt", err)
	}
	for i, f := range tap.frames {
		index, err := standby.AppendCopy(f)
		if err != nil || index != uint64(i)+1 {
			t.Fatalf("copy of record %d: index %d, %v", i+1, index, err)
		}
	}
	if err := awaitDurable(t, standby, 60); err != nil {
		t.Fatal(err)
	}
	standby.Close()

	want, _ := Segments(filepath.Join(root, "primary"))
	got, _ := Segments(filepath.Join(root, "standby"))
	if len(want) < 2 || len(got) != len(want) {
		t.Fatalf("segments: primary %d, standby %d (want several, the same)", len(want), len(got))
	}
	for i := range want {
		a, _ := os.ReadFile(want[i].Path)
		b, _ := os.ReadFile(got[i].Path)
		if want[i].FirstIndex != got[i].FirstIndex || !bytes.Equal(a, b) {
			t.Fatalf("segment %d differs: %s (%d bytes) vs %s (%d bytes)", i, want[i].Path, len(a), got[i].Path, len(b))
		}
	}
}
