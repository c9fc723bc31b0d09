package ledger

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/seckill/seckill/actors/sku"
)

// TestPoolTakeCredit grants and credits at random and checks that every
// token stays in exactly one place: never granted, free, or out (held by
// a cell), with the pool's totals in step.
func TestPoolTakeCredit(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		limit := uint32(rapid.IntRange(1, 60).Draw(t, "limit"))
		p := NewPool(limit, 5)
		var out [][]sku.TokenRange // held by "cells"
		for range rapid.IntRange(1, 60).Draw(t, "steps") {
			if len(out) > 0 && rapid.Bool().Draw(t, "credit") {
				i := rapid.IntRange(0, len(out)-1).Draw(t, "which")
				p = p.credit(out[i])
				out = append(out[:i], out[i+1:]...)
			} else {
				units := uint32(rapid.IntRange(1, 20).Draw(t, "units"))
				before := p.Unallocated()
				var rs []sku.TokenRange
				p, rs = p.take(units)
				if got := sku.RangesUnits(rs); got != min(uint64(units), before) {
					t.Fatalf("took %d of %d with %d left", got, units, before)
				}
				if len(rs) > 0 {
					if err := sku.CheckRanges(rs, limit); err != nil {
						t.Fatal(err)
					}
					out = append(out, rs)
				}
			}
			if err := p.validate(); err != nil {
				t.Fatal(err)
			}
			seen := make([]int, limit+1)
			for _, rs := range append(out, p.Free, []sku.TokenRange{{First: p.NextToken, Last: limit}}) {
				for _, r := range rs {
					for tok := r.First; tok <= r.Last; tok++ {
						seen[tok]++
					}
				}
			}
			for tok := uint32(1); tok <= limit; tok++ {
				if seen[tok] != 1 {
					t.Fatalf("token %d is in %d places", tok, seen[tok])
				}
			}
			var held uint64
			for _, rs := range out {
				held += sku.RangesUnits(rs)
			}
			if p.Granted-p.Returned != held {
				t.Fatalf("granted %d - returned %d != held %d", p.Granted, p.Returned, held)
			}
		}
	})
}
