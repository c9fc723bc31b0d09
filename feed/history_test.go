package feed

import (
	"bytes"
	"errors"
	"testing"
)

// A chain names the history of every index, decides cursors, and survives
// a write and a load; another SKU's file is refused.
func TestChain(t *testing.T) {
	key := [16]byte{7}
	dir := t.TempDir()
	c, err := LoadHistory(dir, key)
	if err != nil || c.Root != RootHistory(key) || c.At(5) != c.Root {
		t.Fatalf("no file: %+v, %v", c, err)
	}
	f1, err := c.Fork(100, bytes.NewReader(bytes.Repeat([]byte{1}, 8)))
	if err != nil {
		t.Fatal(err)
	}
	f2, err := f1.Fork(150, bytes.NewReader(bytes.Repeat([]byte{2}, 8)))
	if err != nil {
		t.Fatal(err)
	}
	if err := f2.Write(dir); err != nil {
		t.Fatal(err)
	}
	got, err := LoadHistory(dir, key)
	if err != nil {
		t.Fatal(err)
	}
	h1, h2 := "0101010101010101", "0202020202020202"
	if got.At(100) != got.Root || got.At(101) != h1 || got.At(150) != h1 || got.At(151) != h2 {
		t.Fatalf("chain %+v", got)
	}
	for _, c := range []struct {
		h     string
		index uint64
		fork  uint64
		err   error
	}{
		{got.Root, 100, 0, nil}, {got.Root, 101, 100, ErrDiverged}, {h1, 150, 0, nil}, {h1, 151, 150, ErrDiverged},
		{h2, 999, 0, nil}, {"ffffffffffffffff", 1, 0, ErrUnknownHistory},
	} {
		fork, err := got.Check(c.h, c.index)
		if fork != c.fork || !errors.Is(err, c.err) {
			t.Errorf("Check(%s, %d) = %d, %v; want %d, %v", c.h, c.index, fork, err, c.fork, c.err)
		}
	}
	// A fork before an earlier one abandons it.
	f3, _ := got.Fork(50, bytes.NewReader(bytes.Repeat([]byte{3}, 8)))
	if len(f3.Forks) != 1 || len(f3.Abandoned) != 2 {
		t.Fatalf("fork at 50: %+v", f3)
	}
	if fork, err := f3.Check(h1, 120); fork != 50 || !errors.Is(err, ErrDiverged) {
		t.Fatalf("abandoned cursor: %d, %v", fork, err)
	}
	if _, err := LoadHistory(dir, [16]byte{8}); err == nil {
		t.Fatal("another SKU's chain loaded")
	}
}
