package sku

import (
	"strconv"
	"strings"
	"testing"
)

// The arena's blocks start small and double up to arenaBlockSize; every
// pair added reads back at its position, and a frozen copy keeps reading
// what it saw while the arena goes on growing.
func TestArenaGrowsBlocksAndKeepsPositions(t *testing.T) {
	type pair struct {
		pos  uint64
		x, y string
	}
	var (
		a      arena
		pairs  []pair
		frozen arena
		seen   int
	)
	for i := 0; len(a.blocks) < 12; i++ {
		x := strings.Repeat(string(rune('a'+i%26)), 1+i%MaxIDLength)
		y := strconv.Itoa(i)
		pairs = append(pairs, pair{a.add(x, y), x, y})
		if i == 100 {
			frozen, seen = a.freeze(), len(pairs)
		}
	}
	want := arenaFirstBlock
	for i, b := range a.blocks {
		if cap(b) != want {
			t.Fatalf("block %d holds %d bytes, want %d", i, cap(b), want)
		}
		want = min(2*want, arenaBlockSize)
	}
	if cap(a.blocks[len(a.blocks)-1]) != arenaBlockSize {
		t.Fatalf("the blocks never reached %d bytes", arenaBlockSize)
	}
	read := func(a *arena, p pair) string {
		return a.str(p.pos, 0, len(p.x)) + "|" + a.str(p.pos, len(p.x), len(p.y))
	}
	for i, p := range pairs {
		if got := read(&a, p); got != p.x+"|"+p.y {
			t.Fatalf("pair %d reads %q, want %q", i, got, p.x+"|"+p.y)
		}
	}
	for i, p := range pairs[:seen] {
		if got := read(&frozen, p); got != p.x+"|"+p.y {
			t.Fatalf("the frozen copy reads pair %d as %q, want %q", i, got, p.x+"|"+p.y)
		}
	}
}
