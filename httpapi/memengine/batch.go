package memengine

import (
	"context"
	"fmt"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
)

// ReserveBatch implements httpapi.Reserver: the items are decided in order
// under one hold of the twin's lock, as the real engine decides them in one
// round of the SKU's actor. The hooks see the batch once (KindReserveBatch):
// an error from Before answers every item with it and decides nothing, one
// from Decided answers every item with it after all were decided.
func (e *Engine) ReserveBatch(ctx context.Context, campaignID, skuID string, items []actors.ReserveItem) ([]actors.ItemResult, error) {
	if len(items) == 0 || len(items) > actors.MaxBatchItems {
		return nil, fmt.Errorf("%w: a batch holds 1 to %d items, not %d", actors.ErrInvalidArgument, actors.MaxBatchItems, len(items))
	}
	out := make([]actors.ItemResult, len(items))
	err := e.run(ctx, Call{Kind: KindReserveBatch, CampaignID: campaignID, SKUID: skuID, Items: items},
		func() (sku.Result, error) {
			s, err := e.lockedSKU(campaignID, skuID)
			if err != nil {
				return sku.Result{}, err
			}
			now := e.now()
			for i, it := range items {
				res := s.reserve(now, it.RequestID, it.UserID, it.Holder)
				out[i] = actors.ItemResult{Result: res, Err: invalid(res)}
			}
			return sku.Result{}, nil
		})
	switch {
	case err == actors.ErrUnknownSKU:
		return nil, err
	case err != nil:
		for i := range out {
			out[i] = actors.ItemResult{Err: err}
		}
	}
	return out, nil
}
