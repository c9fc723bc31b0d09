package ledger

import (
	"fmt"

	"github.com/seckill/seckill/actors/sku"
)

// The ledger's rules, apart from where the ledger is kept: each operation
// reads what it needs of one SKU for one cell (a cellRead: in one etcd
// request for Ledger, under one lock for Memory), the rule decides the
// answer and what to write, and the store writes it only if nothing it
// read changed (etcd: the transaction's compares; Memory: the lock).

// cellRead is what an Allocate or a Credit read of one SKU's ledger for
// one cell. A value that did not decode is the error of its field, so
// that the rules decide which refusal comes first.
type cellRead struct {
	pool     Pool
	poolErr  error // ErrNotFound without a ledger, ErrCorrupt
	epoch    uint64
	epochErr error
	// writtenOff: the cell's quota of the SKU was written off.
	writtenOff bool
	// marked: the cell's log mark of the SKU exists (logmark.go; read by
	// MarkLog and LogMarked only).
	marked bool
	// stored: the allocation (Allocate) or the return (Credit) of the seq
	// asked exists; existing is the allocation as stored.
	stored   bool
	existing Allocation
	// grants and returns are the cell's (read by Credit only).
	grants, returns []Allocation
	listErr         error
}

// checkAllocate checks Allocate's arguments.
func checkAllocate(cell string, seq, epoch uint64, units uint32) error {
	if seq == 0 || epoch == 0 || !sku.ValidID(cell) {
		return fmt.Errorf("ledger: allocate: seq %d, epoch %d, units %d, cell %q", seq, epoch, units, cell)
	}
	return nil
}

// allocate decides an Allocate: the allocation to answer and, when write,
// the pool to store with it (see Ledger.Allocate).
func (v cellRead) allocate(cell string, seq, epoch uint64, units uint32) (a Allocation, next Pool, write bool, err error) {
	switch {
	case v.writtenOff:
		return Allocation{}, Pool{}, false, ErrWrittenOff
	case v.stored && !plantedNoCreateGuard:
		return v.existing, Pool{}, false, nil
	case v.poolErr != nil:
		return Allocation{}, Pool{}, false, v.poolErr
	case v.epochErr != nil:
		return Allocation{}, Pool{}, false, v.epochErr
	case v.epoch != epoch:
		return Allocation{}, Pool{}, false, fmt.Errorf("%w: %d, not %d", ErrFenced, v.epoch, epoch)
	}
	ask := units
	if ask == 0 {
		ask = v.pool.Chunk
	}
	next, rs := v.pool.take(ask)
	if len(rs) == 0 {
		return Allocation{}, Pool{}, false, ErrExhausted
	}
	return Allocation{Cell: cell, Seq: seq, Epoch: epoch, Ranges: rs}, next, true, nil
}

// markLog decides a MarkLog: whether to create the mark (see
// Ledger.MarkLog). A mark that exists answers as it stands, as a stored
// allocation does, before the epoch is looked at.
func (v cellRead) markLog(epoch uint64) (write bool, err error) {
	switch {
	case v.writtenOff:
		return false, ErrWrittenOff
	case v.marked:
		return false, nil
	case v.poolErr != nil:
		return false, v.poolErr
	case v.epochErr != nil:
		return false, v.epochErr
	case v.epoch != epoch:
		return false, fmt.Errorf("%w: %d, not %d", ErrFenced, v.epoch, epoch)
	}
	return true, nil
}

// logMarked decides a LogMarked (see Ledger.LogMarked).
func (v cellRead) logMarked() (bool, error) {
	switch {
	case v.writtenOff:
		return false, ErrWrittenOff
	case v.poolErr != nil:
		return false, v.poolErr
	}
	return v.marked, nil
}

// checkCredit checks Credit's arguments. The ranges must be what a
// RETURN record holds (sorted, disjoint, within 1..sku.MaxSaleLimit):
// overlapping ones would credit their shared tokens twice and leave a
// free list the pool's own validation refuses, and unsorted ones would be
// stored as a return that decodeAllocation refuses at every later read.
func checkCredit(cell string, ret Allocation) error {
	if ret.Seq == 0 || len(ret.Ranges) == 0 || ret.Cell != cell {
		return fmt.Errorf("ledger: credit: return %d of %q with %d ranges by %q", ret.Seq, ret.Cell, len(ret.Ranges), cell)
	}
	if err := sku.CheckRanges(ret.Ranges, sku.MaxSaleLimit); err != nil {
		return fmt.Errorf("ledger: credit: return %d of %q: %v", ret.Seq, cell, err)
	}
	return nil
}

// credit decides a Credit: when write, the pool to store with the return
// (see Ledger.Credit).
func (v cellRead) credit(epoch uint64, ret Allocation) (next Pool, write bool, err error) {
	switch {
	case v.writtenOff:
		return Pool{}, false, ErrWrittenOff
	case v.stored:
		return Pool{}, false, nil // credited before
	case v.poolErr != nil:
		return Pool{}, false, v.poolErr
	case v.epochErr != nil:
		return Pool{}, false, v.epochErr
	case v.epoch != epoch:
		return Pool{}, false, fmt.Errorf("%w: %d, not %d", ErrFenced, v.epoch, epoch)
	case v.listErr != nil:
		return Pool{}, false, v.listErr
	}
	if n := heldOf(v.grants, v.returns).count(ret.Ranges); n != ret.Units() {
		return Pool{}, false, fmt.Errorf("%w: %d of %d tokens", ErrNotOwned, n, ret.Units())
	}
	return v.pool.credit(ret.Ranges), true, nil
}

// publish decides a Publish: the new pool and each cell's allocation 1
// (none for a grant of 0 units).
func publish(saleLimit, chunk uint32, initial []InitialGrant) (Pool, []Allocation, error) {
	pool := NewPool(saleLimit, chunk)
	if err := pool.validate(); err != nil {
		return Pool{}, nil, fmt.Errorf("ledger: publish: %v", err)
	}
	var allocs []Allocation
	seen := map[string]bool{}
	for _, g := range initial {
		if !sku.ValidID(g.Cell) || seen[g.Cell] {
			return Pool{}, nil, fmt.Errorf("ledger: publish: bad or repeated cell %q", g.Cell)
		}
		seen[g.Cell] = true
		if g.Units == 0 {
			continue // no allocation 1: the cell starts empty and tops up
		}
		var rs []sku.TokenRange
		pool, rs = pool.take(g.Units)
		if sku.RangesUnits(rs) != uint64(g.Units) {
			return Pool{}, nil, fmt.Errorf("ledger: publish: initial grants exceed sale_limit %d", saleLimit)
		}
		allocs = append(allocs, Allocation{Cell: g.Cell, Seq: 1, Ranges: rs})
	}
	return pool, allocs, nil
}

// writeOff decides a WriteOffCell of a cell with these grants and returns.
func writeOff(cell string, grants, returns []Allocation, atMs int64) WriteOff {
	return WriteOff{Cell: cell, Units: heldUnits(grants, returns), Allocations: len(grants), Returns: len(returns), AtMs: atMs}
}
