package main

import (
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/feed"
)

// cellJSON is a celled SKU's quota as verify rebuilds it from the log: the
// cell, its epoch, and its grants and returns in log order (compare them
// with the ledger's allocations: seckillctl audit, ledger.State).
type cellJSON struct {
	Cell    string           `json:"cell"`
	Epoch   uint64           `json:"epoch"`
	Grants  []*feed.CellData `json:"grants"`  // as the seckill.cell.granted events carry them
	Returns []*feed.CellData `json:"returns"` // as the seckill.cell.returned events carry them
}

func cellOf(m *sku.Machine) *cellJSON {
	cell := m.Definition().Cell
	c := &cellJSON{Cell: cell, Epoch: m.Epoch(), Grants: []*feed.CellData{}, Returns: []*feed.CellData{}}
	for _, g := range m.Grants() {
		c.Grants = append(c.Grants, feed.NewCellData(cell, &g))
	}
	for _, r := range m.Returns() {
		c.Returns = append(c.Returns, feed.NewCellData(cell, &r))
	}
	return c
}
