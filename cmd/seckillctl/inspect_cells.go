package main

import (
	"github.com/seckill/seckill/actors/sku"
)

// allocationJSON is a GRANT's allocation, a RETURN's return or an EPOCH's
// epoch as inspect wal prints them. Token ranges are "first-last".
type allocationJSON struct {
	Seq    uint64   `json:"seq,omitempty"`
	Epoch  uint64   `json:"epoch"`
	Units  uint64   `json:"units,omitempty"`
	Ranges []string `json:"token_ranges,omitempty"`
}

func allocationOf(a *sku.Allocation) *allocationJSON {
	if a == nil {
		return nil
	}
	j := &allocationJSON{Seq: a.Seq, Epoch: a.Epoch, Units: a.Units()}
	for _, r := range a.Ranges {
		j.Ranges = append(j.Ranges, r.String())
	}
	return j
}
