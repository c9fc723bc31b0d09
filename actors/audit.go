package actors

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/seckill/seckill/actors/shell"
	"github.com/seckill/seckill/actors/sku"
)

// ErrAuditPending is returned by Audit when ctx is done before the SKU's
// recount finished: the recount goes on off the actor, and a later Audit
// gets its result once it is done (within AuditKeep), instead of starting
// another; one made while it still runs shares it if nothing was recorded
// since its freeze, and otherwise waits for the next. Nothing was changed:
// retry.
var ErrAuditPending = errors.New("actors: the audit's recount has not finished yet")

// AuditKeep is how long the result of a recount that every caller gave
// up on (ErrAuditPending) is kept for the next caller (shell.AuditKeep).
const AuditKeep = shell.AuditKeep

// Audit checks every invariant of a SKU (see sku.Frozen.Audit). The SKU's
// shell only freezes its state (copy on write, as a snapshot does,
// O(reservations/4096)); the recount runs on a goroutine of its own, so
// reserves go on meanwhile. The counts are those the actor keeps
// incrementally, at the freeze. Callers that arrive while a recount runs
// share it if no record was appended since its freeze, and otherwise wait
// for the next (a cancel answered before the audit was asked is in its
// counts); a recount starts no sooner after the last one ended than that
// one took (package actors/shell owns the rule). Errors: ErrUnknownSKU,
// ErrUnavailable, ErrBusy (too many operators' requests wait for the SKU),
// ErrClosed, and ErrAuditPending when ctx is done first.
func (e *Engine) Audit(ctx context.Context, campaignID, skuID string) (sku.Audit, error) {
	h := e.SKU(campaignID, skuID)
	if h == nil {
		return sku.Audit{}, ErrUnknownSKU
	}
	c := &auditCaller{reply: make(chan auditAnswer, 1)}
	if err := h.requestAudit(c); err != nil {
		return sku.Audit{}, err
	}
	select {
	case r := <-c.reply:
		return r.audit, r.err
	case <-ctx.Done():
		if c.state.CompareAndSwap(auditWaiting, auditGone) {
			return sku.Audit{}, ErrAuditPending
		}
		r := <-c.reply // answered meanwhile: the answer is on its way
		return r.audit, r.err
	}
}

// auditCaller is one caller of Engine.Audit: the shell's AuditWaiter.
type auditCaller struct {
	state atomic.Int32     // auditWaiting, then auditAnswered or auditGone
	reply chan auditAnswer // capacity 1
}

const (
	auditWaiting = iota
	auditAnswered
	auditGone
)

type auditAnswer struct {
	audit sku.Audit
	err   error
}

// Waiting implements shell.AuditWaiter.
func (c *auditCaller) Waiting() bool { return c.state.Load() == auditWaiting }

// Audited implements shell.AuditWaiter: the answer goes to a caller still
// waiting, never blocking.
func (c *auditCaller) Audited(a sku.Audit, err error) bool {
	if !c.state.CompareAndSwap(auditWaiting, auditAnswered) {
		return false
	}
	c.reply <- auditAnswer{audit: a, err: err}
	return true
}

// recount is the recount of a frozen state: sku.Frozen.Audit (a test
// holds it back to observe the SKU while it runs).
var recount = (*sku.Frozen).Audit
