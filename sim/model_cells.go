package sim

import (
	"fmt"
	"maps"
	"slices"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/sku"
)

// The model of a celled SKU (one cell's view): its pool is the
// tokens granted by the ledger (GRANT), less those returned (RETURN); it
// never records SOLD_OUT; its epoch only grows (EPOCH). Written apart from
// sku/grants.go, from the rules of docs/cells.md.

// modelCell is the part of the model only a celled SKU has.
type modelCell struct {
	unsold   []uint32                  // granted tokens never handed out, in grant order
	grants   map[uint64]sku.Allocation // by allocation seq
	returns  map[uint64]sku.Allocation // by return seq
	epoch    uint64
	granted  uint64
	returned uint64
}

func (c modelCell) clone() modelCell {
	c.unsold = slices.Clone(c.unsold)
	c.grants = maps.Clone(c.grants)
	c.returns = maps.Clone(c.returns)
	return c
}

func (m *model) celled() bool { return m.def.Cell != "" }

// grant adds allocation a: once per seq; the same seq again changes
// nothing, with other content it is refused.
func (m *model) grant(now int64, a sku.Allocation) sku.Outcome {
	if !m.celled() {
		return sku.OutcomeInvalid
	}
	if old, ok := m.cell.grants[a.Seq]; ok {
		if fmt.Sprint(old) != fmt.Sprint(a) {
			return sku.OutcomeInvalid
		}
		return sku.OutcomeOK
	}
	m.effect(m.at(now), func() {
		if m.cell.grants == nil {
			m.cell.grants = map[uint64]sku.Allocation{}
		}
		m.cell.grants[a.Seq] = a
		for _, r := range a.Ranges {
			for t := r.First; t <= r.Last; t++ {
				m.cell.unsold = append(m.cell.unsold, t)
			}
		}
		m.cell.granted += a.Units()
	})
	return sku.OutcomeOK
}

// giveBack returns up to units available tokens as return seq: the unsold
// tokens granted last first, then released ones, oldest first. A seq
// already returned changes nothing and answers the same units.
func (m *model) giveBack(now int64, seq, epoch uint64, units uint32) (sku.Outcome, uint64) {
	if old, ok := m.cell.returns[seq]; ok {
		return sku.OutcomeOK, old.Units()
	}
	units = min(units, m.available())
	if units == 0 {
		return sku.OutcomeOK, 0
	}
	m.effect(m.at(now), func() {
		fromUnsold := min(int(units), len(m.cell.unsold))
		tokens := slices.Clone(m.cell.unsold[len(m.cell.unsold)-fromUnsold:])
		m.cell.unsold = m.cell.unsold[:len(m.cell.unsold)-fromUnsold]
		rest := int(units) - fromUnsold
		tokens = append(tokens, m.released[:rest]...)
		m.released = slices.Clone(m.released[rest:])
		var rs []sku.TokenRange
		for _, t := range tokens {
			rs = append(rs, sku.TokenRange{First: t, Last: t})
		}
		if m.cell.returns == nil {
			m.cell.returns = map[uint64]sku.Allocation{}
		}
		m.cell.returns[seq] = sku.Allocation{Seq: seq, Epoch: epoch, Ranges: sku.NormalizeRanges(rs)}
		m.cell.returned += uint64(units)
	})
	return sku.OutcomeOK, uint64(units)
}

// setEpoch records a higher epoch; the same one changes nothing; a lower
// one is refused.
func (m *model) setEpoch(now int64, epoch uint64) sku.Outcome {
	switch {
	case epoch < m.cell.epoch:
		return sku.OutcomeInvalid
	case epoch == m.cell.epoch:
		return sku.OutcomeOK
	}
	m.effect(m.at(now), func() { m.cell.epoch = epoch })
	return sku.OutcomeOK
}

// checkCell compares a celled SKU's grants, returns, epoch and counts.
func checkCell(m *model, e *sku.Machine) error {
	c := e.Counts()
	if c.Granted != m.cell.granted || c.Returned != m.cell.returned || e.Epoch() != m.cell.epoch {
		return fmt.Errorf("granted %d returned %d epoch %d, model %d %d %d", c.Granted, c.Returned, e.Epoch(),
			m.cell.granted, m.cell.returned, m.cell.epoch)
	}
	if uint64(c.Available)+uint64(c.Reserved)+uint64(c.Confirmed) != c.Granted-c.Returned {
		return fmt.Errorf("granted %d - returned %d != available %d + reserved %d + confirmed %d",
			c.Granted, c.Returned, c.Available, c.Reserved, c.Confirmed)
	}
	if len(e.Grants()) != len(m.cell.grants) || len(e.Returns()) != len(m.cell.returns) {
		return fmt.Errorf("%d grants %d returns, model %d %d", len(e.Grants()), len(e.Returns()), len(m.cell.grants), len(m.cell.returns))
	}
	for _, g := range e.Grants() {
		if fmt.Sprint(g) != fmt.Sprint(m.cell.grants[g.Seq]) {
			return fmt.Errorf("grant %d: %v, model %v", g.Seq, g, m.cell.grants[g.Seq])
		}
	}
	for _, r := range e.Returns() {
		if fmt.Sprint(r) != fmt.Sprint(m.cell.returns[r.Seq]) {
			return fmt.Errorf("return %d: %v, model %v", r.Seq, r, m.cell.returns[r.Seq])
		}
	}
	return nil
}

// checkCellReport compares what the engine reports of a celled SKU (the
// agent's view) with the model.
func checkCellReport(m *model, rep core.CellReport) error {
	c := rep.Counts
	if !rep.Celled || rep.Epoch != m.cell.epoch || len(rep.Grants) != len(m.cell.grants) || len(rep.Returns) != len(m.cell.returns) ||
		c.Granted != m.cell.granted || c.Returned != m.cell.returned {
		return fmt.Errorf("cell report: celled %v epoch %d, %d grants %d returns, granted %d returned %d; model epoch %d, %d grants %d returns, granted %d returned %d",
			rep.Celled, rep.Epoch, len(rep.Grants), len(rep.Returns), c.Granted, c.Returned,
			m.cell.epoch, len(m.cell.grants), len(m.cell.returns), m.cell.granted, m.cell.returned)
	}
	return nil
}
