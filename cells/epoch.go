package cells

import (
	"context"
	"sync"
)

// CellEpoch is the epoch one cell process takes in the ledger, shared by
// the agents of all the process's celled SKUs. The epoch key is per cell,
// not per SKU: if each agent bumped it, the second SKU's bump would fence
// the first SKU's agent of the same process out of the ledger (ErrFenced
// on its next top-up). So the process bumps once, the first time any of
// its agents asks, and every agent records that same epoch in its SKU's
// log (EPOCH). Safe for concurrent use.
type CellEpoch struct {
	ledger EpochBumper
	cell   string

	mu    sync.Mutex
	epoch uint64 // 0 until the bump succeeded
}

// EpochBumper bumps a cell's epoch in the ledger (ledger.Ledger.BumpEpoch).
type EpochBumper interface {
	BumpEpoch(ctx context.Context, cell string) (uint64, error)
}

// NewCellEpoch returns the epoch holder of one process of cell.
func NewCellEpoch(l EpochBumper, cell string) *CellEpoch {
	return &CellEpoch{ledger: l, cell: cell}
}

// Take returns the process's epoch, bumping the cell's epoch in the
// ledger the first time (ledger.BumpEpoch's errors; a failed bump is
// tried again by the next call). Callers wait on each other meanwhile.
func (e *CellEpoch) Take(ctx context.Context) (uint64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.epoch != 0 {
		return e.epoch, nil
	}
	epoch, err := e.ledger.BumpEpoch(ctx, e.cell)
	if err != nil {
		return 0, err
	}
	e.epoch = epoch
	return epoch, nil
}
