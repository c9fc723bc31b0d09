package shell

import (
	"fmt"
	"time"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/wal"
)

// An audit recounts a SKU's whole state (sku.Frozen.Audit) off the shell:
// the shell freezes the state (copy on write), and once the log is
// durable up to the freeze the executor runs the recount (JobRecount) and
// hands it back. Its bound: one recount of a SKU at a time, and the next
// starts no sooner after the last one finished than the last one took
// (from its freeze to its result, by the inputs' clock), so a SKU's
// recounts use at most about half of one core however often operators
// ask. A caller that asks while a recount runs shares it only if no record
// was appended since its freeze: the frozen state is then the state as the
// caller found it. Otherwise the recount's state is one the caller could
// never have read (a cancel answered before it asked is missing from it),
// and the caller waits for the next recount, as those that ask in the
// cool-down do (a JobAuditDue timer, or a tick past it).

// AuditKeep is how long the result of a recount that no caller took (they
// all gave up) is kept for the next caller, who gets it instead of
// starting another: at millions of reservations a recount can outlast a
// caller's deadline, and the retry must get an answer. It is the one
// answer that may be older than its request (its as_of dates it); once a
// later recount's result was taken, it is dropped.
const AuditKeep = time.Minute

// AuditWaiter is a caller waiting for an audit.
type AuditWaiter interface {
	// Waiting reports whether the caller still waits (false: it gave up).
	// A recount starts only for callers that wait.
	Waiting() bool
	// Audited hands over the result (err: the recount could not be made,
	// e.g. the log failed before its records were durable) and reports
	// whether the caller took it (false: it gave up meanwhile). It is
	// called on the shell's goroutine and must not block.
	Audited(a sku.Audit, err error) (taken bool)
}

// audits is the shell's audit slot.
type audits struct {
	run       *auditRun     // the recount being made, nil when none
	queued    []AuditWaiter // callers waiting for the cool-down to end
	notBefore time.Time     // no recount starts before
	timer     bool          // a JobAuditDue is pending
	// kept is the result of the last recount if no caller took it, until
	// keptAt+AuditKeep or the next caller.
	kept   *sku.Audit
	keptAt time.Time
}

// auditRun is one recount and the callers that share it.
type auditRun struct {
	waiters  []AuditWaiter
	frozenAt time.Time
	index    uint64 // the last record of the state frozen
}

// auditResult is what a JobRecount did.
type auditResult struct {
	run    *auditRun
	result sku.Audit
	err    error
}

// Audit asks at now for an audit of the SKU for w: it gets the result no
// caller took (within AuditKeep), shares the recount running if the state
// is still the one it froze, waits for the recount running or the
// cool-down to end, or starts a recount. A failed SKU answers
// core.ErrUnavailable.
func (s *Shell) Audit(now time.Time, w AuditWaiter) {
	a := &s.audit
	switch {
	case a.kept != nil && now.Sub(a.keptAt) < AuditKeep:
		if w.Audited(*a.kept, nil) {
			a.kept = nil
		}
	case a.run != nil && a.run.index == s.core.LastIndex():
		a.run.waiters = append(a.run.waiters, w)
	case a.run != nil: // its end starts the next recount, or the cool-down (recounted)
		a.queued = append(a.queued, w)
	case now.Before(a.notBefore):
		a.queued = append(a.queued, w)
		s.armAuditTimer(now)
	default:
		s.startAudit(now, []AuditWaiter{w})
	}
}

// armAuditTimer asks for a JobAuditDue at the end of the cool-down.
func (s *Shell) armAuditTimer(now time.Time) {
	if s.audit.timer {
		return
	}
	s.audit.timer = true
	s.cfg.Executor.After(s.audit.notBefore.Sub(now), s.job(JobAuditDue, now))
}

// auditDue starts the recount the queued callers wait for, once the
// cool-down is over (a JobAuditDue, or a tick past it).
func (s *Shell) auditDue(now time.Time) {
	a := &s.audit
	if a.run != nil || len(a.queued) == 0 {
		return
	}
	if now.Before(a.notBefore) {
		s.armAuditTimer(now)
		return
	}
	waiters := a.queued
	a.queued = nil
	s.startAudit(now, waiters)
}

// startAudit freezes the state for the callers that still wait, and
// hands the recount to the executor once the log is durable up to the
// freeze (an audit never reports records that could still be lost).
func (s *Shell) startAudit(now time.Time, waiters []AuditWaiter) {
	waiting := waiters[:0]
	for _, w := range waiters {
		if w.Waiting() {
			waiting = append(waiting, w)
		}
	}
	if len(waiting) == 0 {
		return
	}
	if s.failed != nil || s.log == nil {
		for _, w := range waiting {
			w.Audited(sku.Audit{}, core.ErrUnavailable)
		}
		return
	}
	run := &auditRun{waiters: waiting, frozenAt: now, index: s.core.LastIndex()}
	s.audit.run = run
	j := s.job(JobRecount, now)
	j.Index = run.index
	j.audit.run = run
	frozen, recount := s.core.Machine().Freeze(), s.cfg.Recount
	if recount == nil {
		recount = (*sku.Frozen).Audit
	}
	var durableErr error
	j.run = func() {
		if durableErr != nil {
			j.audit.err = core.ErrUnavailable // the read was never made durable: nothing to report
			return
		}
		j.audit.result = recount(frozen)
	}
	executor := s.cfg.Executor
	s.log.Await(j.Index, wal.WaiterFunc(func(err error) {
		durableErr = err
		executor.Go(j)
	}))
}

// recounted hands a recount's result to its callers at now and starts the
// cool-down: as long again as the recount took from its freeze. A result
// no caller took is kept for the next (AuditKeep); one a caller took drops
// the result kept before it, which is older than an answer given.
func (s *Shell) recounted(now time.Time, j *Job) {
	a := &s.audit
	r := &j.audit
	if r.run != a.run {
		panic(fmt.Sprintf("shell: %s/%s: a recount ended that is not the one running", s.cfg.CampaignID, s.cfg.SKUID))
	}
	a.run = nil
	if took := now.Sub(r.run.frozenAt); r.err == nil && (!mutantAuditCoolDown || took > time.Second) {
		a.notBefore = now.Add(max(took, 0))
	}
	taken := false
	for _, w := range r.run.waiters {
		taken = w.Audited(r.result, r.err) || taken
	}
	switch {
	case taken:
		a.kept = nil
	case r.err == nil:
		result := r.result
		a.kept, a.keptAt = &result, now
	}
	s.auditDue(now)
}

// stopAudits answers every caller waiting for an audit err.
func (s *Shell) stopAudits(err error) {
	a := &s.audit
	if a.run != nil {
		for _, w := range a.run.waiters {
			w.Audited(sku.Audit{}, err)
		}
	}
	for _, w := range a.queued {
		w.Audited(sku.Audit{}, err)
	}
	*a = audits{}
}
