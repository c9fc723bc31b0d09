package actors

import (
	"context"
	"fmt"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/sku"
)

// The calls of a celled SKU (sku/grants.go), made by the cell's ledger
// agent (package cells), never by a request. Each returns once its record
// is durable: a grant's tokens are sellable, a return's tokens may be
// credited to the ledger.

// Grant adds allocation a of the quota ledger to a celled SKU (idempotent
// by a.Seq). ErrInvalidArgument wraps the reason of a refusal.
func (e *Engine) Grant(ctx context.Context, campaignID, skuID string, a sku.Allocation) error {
	c := newCall(core.KindGrant)
	c.Cell = &core.CellCall{Alloc: a}
	c, err := e.run(ctx, campaignID, skuID, c)
	if err != nil {
		return err
	}
	o := c.Outcome
	c.free()
	if o != sku.OutcomeOK {
		return fmt.Errorf("%w: grant %d: %s", ErrInvalidArgument, a.Seq, o)
	}
	return nil
}

// Return removes up to units available tokens from a celled SKU as return
// seq under epoch, and returns the return as logged (fewer units, or none,
// when fewer are available; the one already logged for seq on a retry).
func (e *Engine) Return(ctx context.Context, campaignID, skuID string, seq, epoch uint64, units uint32) (sku.Allocation, error) {
	c := newCall(core.KindReturn)
	c.Cell = &core.CellCall{Alloc: sku.Allocation{Seq: seq, Epoch: epoch}, Units: units}
	c, err := e.run(ctx, campaignID, skuID, c)
	if err != nil {
		return sku.Allocation{}, err
	}
	o, a := c.Outcome, c.Cell.Alloc
	c.free()
	if o != sku.OutcomeOK {
		return sku.Allocation{}, fmt.Errorf("%w: return %d: %s", ErrInvalidArgument, seq, o)
	}
	return a, nil
}

// SetEpoch records the epoch the process holds in the ledger for a celled
// SKU. ErrInvalidArgument for an epoch below the one recorded.
func (e *Engine) SetEpoch(ctx context.Context, campaignID, skuID string, epoch uint64) error {
	c := newCall(core.KindEpoch)
	c.Cell = &core.CellCall{Alloc: sku.Allocation{Epoch: epoch}}
	c, err := e.run(ctx, campaignID, skuID, c)
	if err != nil {
		return err
	}
	o := c.Outcome
	c.free()
	if o != sku.OutcomeOK {
		return fmt.Errorf("%w: epoch %d: %s", ErrInvalidArgument, epoch, o)
	}
	return nil
}

// Cell returns a SKU's grants, returns, epoch and counts as its live state
// holds them (possibly ahead of the disk by the records of one round).
func (e *Engine) Cell(ctx context.Context, campaignID, skuID string) (core.CellReport, error) {
	c, err := e.run(ctx, campaignID, skuID, newReportCall(core.KindCell))
	if err != nil {
		return core.CellReport{}, err
	}
	r := c.Report.Cell
	c.free()
	return r, nil
}

// WrongCellError is ErrWrongCell with what a client needs to go to the
// right cell: the cell that owns the user's purchases of the SKU and,
// when the refusing cell knows it, that cell's HTTP base URL as the cell
// announced it (empty otherwise).
type WrongCellError struct {
	CampaignID, SKUID, UserID string
	Cell                      string
	Address                   string
}

func (e *WrongCellError) Error() string {
	return fmt.Sprintf("%v: user %s of %s/%s is cell %s's", ErrWrongCell, e.UserID, e.CampaignID, e.SKUID, e.Cell)
}

// Unwrap makes errors.Is(err, ErrWrongCell) hold.
func (e *WrongCellError) Unwrap() error { return ErrWrongCell }
