package actors

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/sku"
)

// ErrAuditPending is returned by Audit when ctx is done before the SKU's
// recount finished: the recount goes on off the actor, and a later Audit
// waits for it, or gets its result once it is done (within AuditKeep),
// instead of starting another. Nothing was changed: retry.
var ErrAuditPending = errors.New("actors: the audit's recount has not finished yet")

// AuditKeep is how long the result of a recount that a caller gave up on
// (ErrAuditPending) is kept for the next caller, who gets it instead of
// starting another: at millions of reservations a recount can outlast a
// caller's deadline, and the retry must get an answer.
const AuditKeep = time.Minute

// auditSlot is one SKU's recount: the one running or the last one, and the
// earliest start of the next. Its bound: at most one recount of a SKU runs
// at a time, and the next starts no sooner than the last one took after it
// finished, so a SKU's recounts use at most half of one core however often
// operators ask. Guarded by mu.
type auditSlot struct {
	mu        sync.Mutex
	run       *auditRun // nil before the first
	notBefore time.Time
}

// auditRun is one recount; result and err are set before done is closed.
type auditRun struct {
	done   chan struct{}
	result sku.Audit
	err    error
	// Under auditSlot.mu: a caller gave up on it, and when it finished.
	abandoned  bool
	finishedAt time.Time
}

// Audit checks every invariant of a SKU (see sku.Frozen.Audit). The SKU's
// actor only freezes its state (copy on write, as a snapshot does, O(reservations/4096));
// the recount runs on a goroutine of its own, so reserves go on meanwhile.
// The counts are those the actor keeps incrementally, at the freeze.
// Callers that arrive while a recount runs share it; see auditSlot for how
// often one may start. Errors: ErrUnknownSKU, the errors of a read
// (ErrUnavailable, ctx's when the freeze did not happen in time), and
// ErrAuditPending when ctx is done before the recount finished.
func (e *Engine) Audit(ctx context.Context, campaignID, skuID string) (sku.Audit, error) {
	h := e.SKU(campaignID, skuID)
	if h == nil {
		return sku.Audit{}, ErrUnknownSKU
	}
	r, err := h.startAudit(ctx)
	if err != nil {
		return sku.Audit{}, err
	}
	select {
	case <-r.done:
		return r.result, r.err
	case <-ctx.Done():
		h.audit.mu.Lock()
		r.abandoned = true
		h.audit.mu.Unlock()
		return sku.Audit{}, ErrAuditPending
	}
}

// startAudit returns the recount running, the finished one a caller gave
// up on (once, within AuditKeep), or starts one once the cool-down after
// the last allows it.
func (h *SKU) startAudit(ctx context.Context) (*auditRun, error) {
	s := &h.audit
	for {
		s.mu.Lock()
		if r := s.run; r != nil && (!closed(r.done) || r.abandoned && time.Since(r.finishedAt) < AuditKeep) {
			r.abandoned = false
			s.mu.Unlock()
			return r, nil
		}
		if wait := time.Until(s.notBefore); wait > 0 {
			s.mu.Unlock()
			t := time.NewTimer(wait)
			select {
			case <-t.C:
				continue
			case <-ctx.Done():
				t.Stop()
				return nil, ErrAuditPending
			}
		}
		r := &auditRun{done: make(chan struct{})}
		s.run = r
		s.mu.Unlock()
		h.freezeAndRecount(ctx, r)
		return r, nil
	}
}

// freezeAndRecount asks the actor for a frozen copy and recounts it on a
// goroutine of its own, completing r.
func (h *SKU) freezeAndRecount(ctx context.Context, r *auditRun) {
	c, err := h.engine.run(ctx, h.campaignID, h.skuID, newReportCall(core.KindAudit))
	if err != nil {
		r.err = err
		close(r.done)
		return
	}
	frozen := c.Report.Frozen
	c.free()
	go func() {
		start := time.Now()
		r.result = recount(frozen)
		took := time.Since(start)
		h.audit.mu.Lock()
		r.finishedAt = time.Now()
		h.audit.notBefore = r.finishedAt.Add(took)
		h.audit.mu.Unlock()
		close(r.done)
	}()
}

// recount is the recount of a frozen state: sku.Frozen.Audit (a test
// holds it back to observe the SKU while it runs).
var recount = (*sku.Frozen).Audit

// closed reports whether ch is closed.
func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
