package sim

import (
	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/sku"
)

// simLedger is the quota ledger as one cell sees it: fresh tokens granted
// in order, each allocation remembered (it survives the cell's crashes, as
// etcd would), returns never credited back (a single-cell view: nothing
// else could take them).
type simLedger struct {
	next   uint32 // the next token never granted, from 1
	allocs []sku.Allocation
	rets   uint64 // the last return seq asked
}

// cellCall is the calls of a celled SKU, drawn in place of half of the
// redefinitions of a celled run: a new allocation, a repeat of an old one
// (what the agent's reconciliation sends after a crash lost a GRANT), a
// return, an epoch.
func (r *run) cellCall(spec callSpec) error {
	m, l := r.model, &r.ledger
	if l.next == 0 {
		l.next = 1
	}
	a := spec.a / 2
	kind := spec.b % 5
	if kind < 2 && l.next > m.def.SaleLimit || kind == 2 && len(l.allocs) == 0 {
		kind = 3
	}
	switch kind {
	case 0, 1:
		last := min(l.next+a%3, m.def.SaleLimit)
		al := sku.Allocation{Seq: uint64(len(l.allocs) + 1), Epoch: m.cell.epoch, Ranges: []sku.TokenRange{{First: l.next, Last: last}}}
		l.next = last + 1
		l.allocs = append(l.allocs, al)
		return r.decide(r.grantCall(al))
	case 2:
		return r.decide(r.grantCall(l.allocs[int(a)%len(l.allocs)]))
	case 3:
		l.rets++
		return r.decide(r.returnCall(l.rets, m.cell.epoch, a%4))
	}
	epoch := m.cell.epoch + uint64(a%3)
	if a%3 == 0 && epoch > 0 {
		epoch-- // a stale process's epoch: refused
	}
	return r.decide(r.epochCall(epoch))
}

// grantCall, returnCall and epochCall are a celled SKU's calls (those of
// the agent's engine), each with the model's prediction.
func (r *run) grantCall(al sku.Allocation) (*core.Call, func() modelReply) {
	c := &core.Call{Kind: core.KindGrant, Cell: &core.CellCall{Alloc: al}}
	return c, func() modelReply { return modelReply{outcome: r.model.grant(r.now, al)} }
}

func (r *run) returnCall(seq, epoch uint64, units uint32) (*core.Call, func() modelReply) {
	c := &core.Call{Kind: core.KindReturn, Cell: &core.CellCall{Alloc: sku.Allocation{Seq: seq, Epoch: epoch}, Units: units}}
	return c, func() modelReply {
		o, n := r.model.giveBack(r.now, seq, epoch, units)
		return modelReply{outcome: o, seq: uint32(n)}
	}
}

func (r *run) epochCall(epoch uint64) (*core.Call, func() modelReply) {
	c := &core.Call{Kind: core.KindEpoch, Cell: &core.CellCall{Alloc: sku.Allocation{Epoch: epoch}}}
	return c, func() modelReply { return modelReply{outcome: r.model.setEpoch(r.now, epoch)} }
}
