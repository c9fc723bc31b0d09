package actors

import (
	"context"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/sku"
)

// Enter records userID's entry in a lottery SKU, once per user, with the
// tier its entry pass grants (0 without passes). The result's Outcome is
// ENTERED (Duplicate for a repeat, with the original entry),
// REQUEST_ID_REUSED, ENTRIES_NOT_OPEN, ENTRIES_CLOSED, PAUSED or
// NOT_LOTTERY; durable when it returns. Errors: ErrUnknownSKU,
// ErrUnavailable, ErrInvalidArgument, ctx.Err() (result unknown).
func (e *Engine) Enter(ctx context.Context, campaignID, skuID, requestID, userID string, tier uint8) (sku.EntryResult, error) {
	c := newCall(core.KindEnter)
	c.RequestID, c.UserID, c.Tier = requestID, userID, tier
	c, err := e.run(ctx, campaignID, skuID, c)
	if err != nil {
		return sku.EntryResult{}, err
	}
	res := c.Entry
	c.free()
	if res.Outcome == sku.OutcomeInvalid {
		return res, ErrInvalidArgument
	}
	return res, nil
}

// Draw records a lottery's draw inputs: the beacon round, its 32-byte
// randomness and optionally the beacon's signature of the round (checked
// by lottery.CheckSignature, and recorded). It answers DRAW_STARTED once DRAW_STARTED is durable; the
// ranking then runs off the actor and its records follow (the phase turns
// DRAWN). Other outcomes record nothing: NOT_LOTTERY, INVALID (bad
// randomness length, a signature that does not check), WRONG_ROUND, ALREADY_DRAWN, ENTRIES_OPEN,
// BEACON_NOT_DUE.
func (e *Engine) Draw(ctx context.Context, campaignID, skuID string, round uint64, randomness, signature []byte) (sku.Outcome, error) {
	c := newCall(core.KindDraw)
	c.Round, c.Randomness, c.Signature = round, randomness, signature
	c, err := e.run(ctx, campaignID, skuID, c)
	if err != nil {
		return sku.OutcomeNone, err
	}
	o := c.Outcome
	c.free()
	return o, nil
}

// Entry returns the entry a request_id made on a lottery SKU, with its
// answer (ENTERED, WON, WAITLISTED, LOST); ErrNotFound when there is none.
func (e *Engine) Entry(ctx context.Context, campaignID, skuID, requestID string) (sku.EntryView, error) {
	c := newCall(core.KindEntry)
	c.RequestID = requestID
	c, err := e.run(ctx, campaignID, skuID, c)
	if err != nil {
		return sku.EntryView{}, err
	}
	v, found := c.Entry.Entry, c.Found
	c.free()
	if !found {
		return sku.EntryView{}, ErrNotFound
	}
	return v, nil
}

// Frozen returns a frozen copy of a SKU's durable state, to read off the
// actor (the lottery's public information, its pool export).
func (e *Engine) Frozen(ctx context.Context, campaignID, skuID string) (*sku.Frozen, error) {
	c, err := e.run(ctx, campaignID, skuID, newReportCall(core.KindFreeze))
	if err != nil {
		return nil, err
	}
	f := c.Report.Frozen
	c.free()
	return f, nil
}
