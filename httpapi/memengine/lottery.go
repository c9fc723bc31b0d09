package memengine

import (
	"context"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/purchase"
	"github.com/seckill/seckill/actors/sku"
)

// The lottery commands (httpapi.Lotteries). The twin has no actor to rank
// off: a draw ranks its frozen copy and records the whole result before it
// answers, so the phase is DRAWN at once.

// Enter implements httpapi.Lotteries on sku.Machine.Enter.
func (e *Engine) Enter(ctx context.Context, campaignID, skuID, requestID, userID string, tier uint8) (sku.EntryResult, error) {
	var res sku.EntryResult
	err := e.run(ctx, Call{Kind: KindEnter, CampaignID: campaignID, SKUID: skuID, RequestID: requestID, UserID: userID},
		func() (sku.Result, error) {
			s, err := e.lockedSKU(campaignID, skuID)
			if err != nil {
				return sku.Result{}, err
			}
			res = s.enter(e.now(), requestID, userID, tier)
			return sku.Result{Outcome: res.Outcome}, invalid(sku.Result{Outcome: res.Outcome})
		})
	return res, err
}

// enter decides one entry at now on the SKU's machine, behind the user's
// claim in a campaign-scope campaign (actors: Engine.Enter). The caller
// holds e.mu.
func (s *skuState) enter(now int64, requestID, userID string, tier uint8) sku.EntryResult {
	d, done := purchase.Decision{Verdict: purchase.Proceed}, func() {}
	if !s.m.Definition().EntriesClosedAt(now) {
		d, done = s.claim(userID, requestID, true)
	}
	if d.Verdict == purchase.Held { // the request_id's own entry first (actors: heldEntryAnswer)
		if v, found := s.m.EntryByRequest(requestID); found {
			return sku.KnownEntry(v, userID)
		}
		return purchase.HeldEntryResult(d, s.m.Definition().CampaignID, userID)
	}
	defer done()
	res, out := s.m.Enter(now, requestID, userID, tier, nil)
	s.decided(out)
	return res
}

// Draw implements httpapi.Lotteries: sku.Machine.StartDraw, then the
// ranking of a frozen copy recorded at once.
func (e *Engine) Draw(ctx context.Context, campaignID, skuID string, round uint64, randomness, signature []byte) (sku.Outcome, error) {
	var o sku.Outcome
	err := e.run(ctx, Call{Kind: KindDraw, CampaignID: campaignID, SKUID: skuID}, func() (sku.Result, error) {
		s, err := e.lockedSKU(campaignID, skuID)
		if err != nil {
			return sku.Result{}, err
		}
		var out []sku.Record
		now := e.now()
		o, out = s.m.StartDraw(now, round, randomness, signature, nil)
		if rk, ok := s.m.Freeze().RankDraw(); ok && o == sku.OutcomeDrawStarted {
			for done := false; !done; {
				out, done = s.m.RecordDraw(now, rk, 0, out)
			}
		}
		s.decided(out)
		return sku.Result{Outcome: o}, nil
	})
	return o, err
}

// Entry implements httpapi.Lotteries on sku.Machine.EntryByRequest.
func (e *Engine) Entry(ctx context.Context, campaignID, skuID, requestID string) (sku.EntryView, error) {
	var v sku.EntryView
	err := e.run(ctx, Call{Kind: KindEntry, CampaignID: campaignID, SKUID: skuID, RequestID: requestID}, func() (sku.Result, error) {
		s, err := e.lockedSKU(campaignID, skuID)
		if err != nil {
			return sku.Result{}, err
		}
		var found bool
		if v, found = s.m.EntryByRequest(requestID); !found {
			return sku.Result{}, actors.ErrNotFound
		}
		return sku.Result{}, nil
	})
	return v, err
}

// Frozen implements httpapi.Lotteries on sku.Machine.Freeze.
func (e *Engine) Frozen(ctx context.Context, campaignID, skuID string) (*sku.Frozen, error) {
	var f *sku.Frozen
	err := e.run(ctx, Call{Kind: KindFreeze, CampaignID: campaignID, SKUID: skuID}, func() (sku.Result, error) {
		s, err := e.lockedSKU(campaignID, skuID)
		if err == nil {
			f = s.m.Freeze()
		}
		return sku.Result{}, err
	})
	return f, err
}
