package actors

import (
	"context"
	"fmt"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/sku"
)

// MaxBatchItems bounds the items of one ReserveBatch (core.MaxBatchItems).
const MaxBatchItems = core.MaxBatchItems

// ReserveItem is one reserve of a batch: the arguments of
// Engine.ReserveWith that vary per buyer. Holder is the item's entry-pass
// holder (tier, risk, subject keys), zero for an item without a
// pass: the ingress checks the pass, the engine records the holder and
// counts it against max_unpaid_per_subject, as for a single reserve.
type ReserveItem struct {
	RequestID, UserID string
	Holder            sku.Holder
}

// ItemResult is the answer to one item of a batch: what Engine.ReserveWith
// would have returned for it, its Result or its Err (ErrInvalidArgument,
// ErrUnavailable, ErrResultUnknown, ErrBusy, ErrClosed, ctx.Err()).
type ItemResult struct {
	Result sku.Result
	Err    error
}

// ReserveBatch asks for tokens for a batch of buyers of one SKU, as a
// gateway forwards them: the batch goes to the SKU's inbox as one call,
// its items are decided in order within one round of the actor and are
// released together once their records are durable. Each item gets what
// Engine.ReserveWith would have answered it had the items been sent one by one
// in this order with nothing between them (per-item idempotency included:
// a repeated request_id gets its original result with Duplicate set).
// The inbox counts the batch as len(items) calls (Config.InboxMax).
//
// The error is for the whole batch, and then no item was decided:
// ErrUnknownSKU, ErrInvalidArgument (no item, or more than
// MaxBatchItems); otherwise there is one ItemResult per item, in order. A
// ctx that ends first answers every item ctx.Err() (result unknown: the
// actor may still decide them).
//
// On a SKU of a campaign whose purchase_limit is "campaign" each item
// claims its user first, in order (reserveBatchScoped): the items let
// through go to the SKU as one batch call; an item whose user holds a
// purchase on another SKU is answered ALREADY_PURCHASED; an item whose
// user has a reserve being decided on another SKU waits for it and is
// then reserved on its own (Engine.ReserveWith), after the batch.
func (e *Engine) ReserveBatch(ctx context.Context, campaignID, skuID string, items []ReserveItem) ([]ItemResult, error) {
	if len(items) == 0 || len(items) > MaxBatchItems {
		return nil, fmt.Errorf("%w: a batch holds 1 to %d items, not %d", ErrInvalidArgument, MaxBatchItems, len(items))
	}
	h := e.SKU(campaignID, skuID)
	if h == nil {
		return nil, ErrUnknownSKU
	}
	if h.claimsFor(false) {
		return e.reserveBatchScoped(ctx, h, items), nil
	}
	return e.reserveBatchOn(ctx, h, items), nil
}

// reserveBatchOn sends items to h as one batch call.
func (e *Engine) reserveBatchOn(ctx context.Context, h *SKU, items []ReserveItem) []ItemResult {
	c := newCall(core.KindReserveBatch)
	c.Items = make([]core.Call, len(items))
	for i, it := range items {
		c.Items[i] = core.Call{Kind: core.KindReserve, RequestID: it.RequestID, UserID: it.UserID, Holder: it.Holder}
	}
	out := make([]ItemResult, len(items))
	if err := h.do(ctx, c); err != nil {
		for i := range out {
			out[i].Err = err // c is abandoned: the actor may still answer it
		}
		return out
	}
	for i := range c.Items {
		it := &c.Items[i]
		switch {
		case it.Err != nil:
			out[i].Err = it.Err
		case c.Err != nil: // the inbox refused the batch, or the SKU was failed
			out[i].Err = c.Err
		case it.Result.Outcome == sku.OutcomeInvalid:
			out[i] = ItemResult{Result: it.Result, Err: ErrInvalidArgument}
		default:
			out[i].Result = it.Result
		}
	}
	c.free()
	return out
}

// items returns what c counts for in the inbox: its items for a batch,
// else 1.
func (c *call) items() int { return max(1, len(c.Items)) }

// itemsOf returns the items of calls (call.items).
func itemsOf(calls []*call) int {
	n := 0
	for _, c := range calls {
		n += c.items()
	}
	return n
}
