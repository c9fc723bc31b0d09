package sku

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// TestIndexAgainstMap checks the open-addressing index against a Go map
// under random inserts and removals, with few distinct keys so probe runs
// wrap and shift.
func TestIndexAgainstMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var tb table
		x := newIndex(&tb, keyUserID)
		want := map[string]uint32{}
		n := rapid.IntRange(1, 3000).Draw(t, "n")
		for i := 0; i < n; i++ {
			key := fmt.Sprintf("u%d", rapid.IntRange(0, 2000).Draw(t, "key"))
			if seq, ok := want[key]; ok && rapid.Bool().Draw(t, "remove") {
				x.remove(key, seq)
				delete(want, key)
			} else if !ok {
				seq := tb.add(reservation{}, "r"+key, key)
				x.insert(key, seq)
				want[key] = seq
			}
		}
		if x.len() != len(want) {
			t.Fatalf("len %d, want %d", x.len(), len(want))
		}
		for key, seq := range want {
			if got, ok := x.get(key); !ok || got != seq {
				t.Fatalf("get(%s) = %d %v, want %d", key, got, ok, seq)
			}
		}
		for i := 0; i < 50; i++ {
			key := fmt.Sprintf("absent%d", i)
			if _, ok := x.get(key); ok {
				t.Fatalf("found absent key %s", key)
			}
		}
	})
}

func TestValidIDRefusesDotFolders(t *testing.T) {
	for _, id := range []string{".", "..", "", "a/b", "a~b", string(make([]byte, MaxIDLength+1))} {
		if ValidID(id) {
			t.Errorf("ValidID(%q) = true", id)
		}
	}
	for _, id := range []string{"...", ".a", "a.", "demo", "sku-1", "u:1_2.3"} {
		if !ValidID(id) {
			t.Errorf("ValidID(%q) = false", id)
		}
	}
}
