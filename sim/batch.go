package sim

import (
	"errors"
	"fmt"

	"github.com/seckill/seckill/actors/core"
)

// Batch reserves: in a round whose step says so, each run of
// two or more consecutive reserve calls is decided as one batch call
// (core.KindReserveBatch), as a gateway's batch reaches the actor; each
// item carries the holder its entry pass would (pickRequest). The
// model predicts the items one by one, in order, exactly as it predicts
// lone reserves: a batch must be answered what its items alone would have
// been. The plan draws nothing for it (the step's own number decides), so
// the histories of every seed are unchanged but for the grouping.

// batched reports whether the round of s sends its runs of reserves as
// batches (one round in four).
func batched(s step) bool { return s.x%4 == 1 }

// isReserve reports whether a call spec is a reserve.
func isReserve(k callKind) bool { return k == callReserve || k == callReserveRepeat }

// calls decides the calls of a round step: one by one, or with its runs
// of reserves batched.
func (r *run) calls(s step) error {
	specs := s.calls
	for i := 0; i < len(specs); {
		j := i
		for batched(s) && j < len(specs) && isReserve(specs[j].kind) {
			j++
		}
		if j-i >= 2 {
			if err := r.reserveBatch(specs[i:j]); err != nil {
				return err
			}
			i = j
			continue
		}
		if err := r.call(specs[i]); err != nil {
			return err
		}
		i++
	}
	return nil
}

// reserveBatch decides reserves as one batch call and checks each item
// against the model's lone reserve, and the records against its effects.
func (r *run) reserveBatch(specs []callSpec) error {
	now := r.now
	c := &core.Call{Kind: core.KindReserveBatch, Items: make([]core.Call, len(specs))}
	for i, spec := range specs {
		request, user, holder := r.pickRequest(spec)
		c.Items[i] = core.Call{Kind: core.KindReserve, RequestID: request, UserID: user, Holder: holder}
	}
	if r.sh.Failed() != nil {
		r.sh.Decide(r.t(), c)
		for i := range c.Items {
			if !errors.Is(c.Items[i].Err, core.ErrUnavailable) {
				return fmt.Errorf("batch item %d on a failed SKU: %v, want ErrUnavailable", i, c.Items[i].Err)
			}
		}
		return nil
	}
	before := len(r.sh.Core().Ready().Records)
	r.model.effects = 0
	r.sh.Decide(r.t(), c)
	for i := range c.Items {
		// Each item is checked against the model as it stands after it
		// (a later item may change the model's view of the reservation).
		it := &c.Items[i]
		if err := r.checkDecided(it, r.model.reserve(now, it.RequestID, it.UserID, it.Holder)); err != nil {
			return fmt.Errorf("batch item %d %s/%s: %w", i, it.RequestID, it.UserID, err)
		}
		r.countReply(it)
	}
	if wrote := len(r.sh.Core().Ready().Records) - before; wrote != r.model.effects {
		return fmt.Errorf("batch of %d wrote %d records, the model %d", len(c.Items), wrote, r.model.effects)
	}
	r.replies["reserve_batch"]++
	r.restsOn[c] = r.modelIndex
	return nil
}
