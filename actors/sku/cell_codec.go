package sku

import "encoding/binary"

// The cell section of an encoded state (state_codec.go, tag 3): present
// only for a celled SKU, after the passes (tag 1) section, if any, and
// before the purchase section (tag 5) of a campaign-scope campaign. A celled
// SKU is never a lottery (Definition.Validate), so tag 2 never precedes it
// in a valid state; the decoder refuses that through Validate.
const stateSectionCell = 3

// encodeCell appends f's cell section, if the SKU is celled.
func (e *stateEncoder) encodeCell(f *Frozen) {
	if f.def.Cell == "" {
		return
	}
	e.b = append(e.b, stateSectionCell)
	e.b = appendString(e.b, f.def.Cell)
	e.b = binary.AppendUvarint(e.b, f.def.CellMapVersion)
	e.b = binary.AppendUvarint(e.b, f.cell.epoch)
	for _, list := range [][]Allocation{f.cell.grants, f.cell.returns} {
		e.b = binary.AppendUvarint(e.b, uint64(len(list)))
		for i := range list {
			e.b = appendAllocation(e.b, &list[i])
			e.maybeFlush()
		}
	}
	e.b = appendRanges(e.b, f.unsold.ranges)
}

// cellSection decodes the trailing section of a celled SKU and checks the
// pool against it: grants and returns well formed and unique by seq, the
// unsold queue disjoint from the tokens held or released, and granted -
// returned = unsold + released + reserved + confirmed.
func (s *stateDecoder) cellSection(released uint32) {
	m := s.m
	if tag := s.byte(); s.err == nil && tag != stateSectionCell {
		s.fail("unknown trailing section %d", tag)
		return
	}
	m.def.Cell = string(s.bytes())
	m.def.CellMapVersion = s.uvarint()
	m.definitionChanged()
	m.cell.epoch = s.uvarint()
	if s.err != nil {
		return
	}
	if err := m.def.Validate(); err != nil || m.def.Cell == "" {
		s.fail("cell section: %v", err)
		return
	}
	m.pool.celled = true
	for list := 0; list < 2 && s.err == nil; list++ {
		n := s.count("allocation", 4)
		if s.err == nil && n > MaxCellChanges {
			s.fail("%d allocations, at most %d", n, MaxCellChanges)
		}
		for i := uint32(0); i < n && s.err == nil; i++ {
			a := *s.allocation()
			if s.err != nil {
				return
			}
			if err := CheckRanges(a.Ranges, m.def.SaleLimit); err != nil || a.Seq == 0 {
				s.fail("allocation %d: seq %d: %v", i+1, a.Seq, err)
				return
			}
			if list == 0 {
				if m.HasGrant(a.Seq) {
					s.fail("grant %d listed twice", a.Seq)
				}
				m.cell.addGrant(a)
			} else {
				if _, dup := m.cell.returnIndex[a.Seq]; dup {
					s.fail("return %d listed twice", a.Seq)
				}
				m.cell.addReturn(a)
			}
		}
	}
	unsold := s.ranges()
	if s.err != nil {
		return
	}
	if len(s.b) != 0 && s.b[0] != stateSectionPurchase { // the purchase section: lastSection
		s.fail("%d trailing bytes: section tag %d unknown or out of order", len(s.b), s.b[0])
		return
	}
	sorted := NormalizeRanges(append([]TokenRange(nil), unsold...))
	if err := checkSorted(sorted, m.def.SaleLimit); err != nil {
		s.fail("unsold tokens: %v", err)
		return
	}
	for _, r := range unsold {
		for t := r.First; t <= r.Last && int(t) <= len(m.pool.slots); t++ {
			if s.held[(t-1)/64]&(1<<((t-1)%64)) != 0 {
				s.fail("token %d is unsold and also held or released", t)
				return
			}
		}
	}
	m.pool.unsold.push(unsold)
	owned := uint64(m.pool.unsold.units) + uint64(released) + uint64(m.pool.reserved) + uint64(m.pool.confirmed)
	if m.cell.returned > m.cell.granted || owned != m.cell.granted-m.cell.returned {
		s.fail("granted %d - returned %d != %d tokens owned", m.cell.granted, m.cell.returned, owned)
	}
}
