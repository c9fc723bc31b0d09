package actors

import (
	"context"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/purchase"
	"github.com/seckill/seckill/actors/sku"
)

// Enter records userID's entry in a lottery SKU, once per user, with the
// holder its entry pass vouched for (tier, risk, subject keys; the zero
// Holder without a pass: sku.Machine.Enter). The result's Outcome is
// ENTERED (Duplicate for a repeat, with the original entry),
// REQUEST_ID_REUSED, ENTRIES_NOT_OPEN, ENTRIES_CLOSED, PAUSED,
// SUBJECT_LIMIT or NOT_LOTTERY; durable when it returns. Errors: ErrUnknownSKU,
// ErrUnavailable, ErrInvalidArgument, ctx.Err() (result unknown).
//
// In a campaign whose purchase_limit is "campaign" the entry claims its
// user like a reserve (admit): a user holding a live purchase on another
// SKU gets ALREADY_PURCHASED (Purchase), one whose entry on another
// lottery SKU may still win ALREADY_ENTERED (Entered), neither recorded;
// ErrBusy and ErrUnavailable as Reserve's.
func (e *Engine) Enter(ctx context.Context, campaignID, skuID, requestID, userID string, holder sku.Holder) (sku.EntryResult, error) {
	h := e.SKU(campaignID, skuID)
	if h == nil {
		return sku.EntryResult{}, ErrUnknownSKU
	}
	if !h.claimsFor(true) || h.entriesClosedAt(e.cfg.Clock().UnixMilli()) {
		return e.enterOn(ctx, h, requestID, userID, holder)
	}
	var res sku.EntryResult
	d, err := e.admit(ctx, h, userID, requestID, func() error {
		var err error
		res, err = e.enterOn(ctx, h, requestID, userID, holder)
		return err
	})
	if d.Verdict == purchase.Proceed || err != nil {
		return res, err
	}
	return e.heldEntryAnswer(ctx, h, userID, requestID, d)
}

// enterOn runs an entry on h.
func (e *Engine) enterOn(ctx context.Context, h *SKU, requestID, userID string, holder sku.Holder) (sku.EntryResult, error) {
	c := newCall(core.KindEnter)
	c.RequestID, c.UserID, c.Holder = requestID, userID, holder
	c, err := e.runOn(ctx, h, c)
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

// heldEntryAnswer answers an entry of requestID on h by a user whose
// claim is held on another SKU (d): the entry requestID made on h before,
// if any (one result per request_id: a retry after the entry lost and
// the user bought elsewhere), else ALREADY_PURCHASED or ALREADY_ENTERED.
func (e *Engine) heldEntryAnswer(ctx context.Context, h *SKU, userID, requestID string, d purchase.Decision) (sku.EntryResult, error) {
	c := newCall(core.KindEntry)
	c.RequestID = requestID
	c, err := e.runOn(ctx, h, c)
	if err != nil {
		return sku.EntryResult{}, err
	}
	v, found := c.Entry.Entry, c.Found
	c.free()
	if found {
		return sku.KnownEntry(v, userID), nil
	}
	return purchase.HeldEntryResult(d, h.campaignID, userID), nil
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
