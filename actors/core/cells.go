package core

import (
	"fmt"

	"github.com/seckill/seckill/actors/sku"
)

// CellCall carries the arguments and reply of the calls of a celled SKU
// (sku/grants.go): KindGrant (Alloc in), KindReturn (Alloc.Seq, Alloc.Epoch
// and Units in; Alloc out: the return decided) and KindEpoch
// (Alloc.Epoch in).
type CellCall struct {
	Alloc sku.Allocation
	Units uint32
}

// CellReport is a celled SKU's part of the ledger as its log holds it.
type CellReport struct {
	Celled  bool
	Epoch   uint64
	Grants  []sku.Allocation // log order; shared, read only
	Returns []sku.Allocation // log order; shared, read only
	Counts  sku.Counts
}

// decideCell runs a cell call on m at now (Unix ms), appending its records.
// Refusals answer OutcomeInvalid with Err set (wrapping
// sku.ErrInvalidDefinition).
func decideCell(m *sku.Machine, now int64, call *Call, out []sku.Record) []sku.Record {
	switch call.Kind {
	case KindGrant:
		call.Outcome, out, call.Err = m.Grant(now, call.Cell.Alloc, out)
	case KindReturn:
		var r sku.ReturnResult
		seq := call.Cell.Alloc.Seq
		r, out = m.Return(now, seq, call.Cell.Alloc.Epoch, call.Cell.Units, out)
		call.Outcome, call.Cell.Alloc = r.Outcome, r.Return
		if r.Outcome == sku.OutcomeInvalid {
			call.Err = fmt.Errorf("%w: return %d refused", sku.ErrInvalidDefinition, seq)
		}
	case KindEpoch:
		call.Outcome, out = m.SetEpoch(now, call.Cell.Alloc.Epoch, out)
		if call.Outcome == sku.OutcomeInvalid {
			call.Err = fmt.Errorf("%w: epoch %d is below %d, or the SKU is not celled", sku.ErrInvalidDefinition, call.Cell.Alloc.Epoch, m.Epoch())
		}
	case KindCell:
		call.Report.Cell = CellReport{Celled: m.Celled(), Epoch: m.Epoch(), Grants: m.Grants(), Returns: m.Returns(), Counts: m.Counts()}
	}
	return out
}
