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

// cellJSON is a celled SKU's quota as verify rebuilds it from the log: the
// cell, its epoch, and its grants and returns in log order (compare them
// with the ledger's allocations: seckillctl audit, ledger.State).
type cellJSON struct {
	Cell    string            `json:"cell"`
	Epoch   uint64            `json:"epoch"`
	Grants  []*allocationJSON `json:"grants"`
	Returns []*allocationJSON `json:"returns"`
}

func cellOf(m *sku.Machine) *cellJSON {
	c := &cellJSON{Cell: m.Definition().Cell, Epoch: m.Epoch(), Grants: []*allocationJSON{}, Returns: []*allocationJSON{}}
	for _, g := range m.Grants() {
		c.Grants = append(c.Grants, allocationOf(&g))
	}
	for _, r := range m.Returns() {
		c.Returns = append(c.Returns, allocationOf(&r))
	}
	return c
}
