package sim

import (
	"errors"
	"fmt"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/shell"
	"github.com/seckill/seckill/actors/sku"
)

// Audits: a step now and then is an operator's audit, and now and then an
// earlier caller gives up. The shell freezes the state and hands the
// recount over once its records are durable (a JobRecount, run at a later
// tick); the rule it owns is checked here against an account written from
// the rule, not from its code:
//   - a recount's result is healthy and counts what the model had at the
//     recount's freeze;
//   - a caller gets a recount frozen with every record appended when it
//     asked: it shares one running only if nothing was recorded since its
//     freeze (an audit never shows a state older than its request);
//   - a recount starts (its freeze) no sooner after the last one ended
//     than the last one took (the cool-down), by the simulated clock;
//   - the result of a recount that no caller took is handed, at once, to
//     the next caller within shell.AuditKeep (the one exception to the
//     rule above: the retry of a caller that gave up), unless a later
//     recount's result was handed out since.

// auditCaller is an operator waiting for an audit: the shell's
// AuditWaiter.
type auditCaller struct {
	r        *run
	asked    uint64 // the model's last record when it asked (0: no bound)
	gone     bool   // it gave up
	answered bool
}

func (c *auditCaller) Waiting() bool { return !c.gone && !c.answered }

// Audited checks the answer against the model the recount was frozen
// from (run.auditExpect).
func (c *auditCaller) Audited(a sku.Audit, err error) bool {
	if !c.Waiting() {
		return false
	}
	c.answered = true
	r := c.r
	r.auditTaken++
	if err != nil {
		if !errors.Is(err, core.ErrUnavailable) {
			r.fail(fmt.Errorf("audit answered %v, want a result or ErrUnavailable", err))
		}
		r.replies["audit unavailable"]++
		return true
	}
	r.replies["audit ok"]++
	if !a.OK() {
		r.fail(fmt.Errorf("audit: %v", a.Violations))
	}
	if r.auditExpect != nil && r.auditIndex < c.asked {
		r.fail(fmt.Errorf("an audit asked at record %d got a recount frozen at record %d: a state older than its request", c.asked, r.auditIndex))
	}
	if m := r.auditExpect; m != nil {
		if err := checkCounts(m, a.Counts); err != nil {
			r.fail(fmt.Errorf("audit: %w", err))
		}
	}
	return true
}

// keptAudit is the result of a recount no caller took, as the model had
// it at the recount's freeze.
type keptAudit struct {
	model *model
	index uint64 // the log index of its freeze
	at    int64  // when the recount ended, ms
}

// audit is an operator's audit. Before it, now and then, the earlier
// callers still waiting give up, and a recount handed over (or the end of
// a cool-down) comes back: the new caller then often finds the cool-down
// that recount started, or the result no caller took.
func (r *run) audit() error {
	if r.rng.IntN(2) == 0 {
		for _, c := range r.auditCallers {
			if c.Waiting() {
				c.gone = true
				r.faults["audit_given_up"]++
			}
		}
	}
	if err := r.runJobs(1, 2, shell.JobRecount, shell.JobAuditDue); err != nil {
		return err
	}
	kept := r.auditKept
	if kept != nil && r.now-kept.at >= shell.AuditKeep.Milliseconds() {
		kept = nil
	}
	c := &auditCaller{r: r, asked: r.modelIndex}
	if kept != nil {
		r.auditExpect, r.auditIndex = kept.model, kept.index
		c.asked = 0 // the kept result may be older than the request
	}
	r.sh.Audit(r.t(), c)
	r.auditExpect, r.auditIndex = nil, 0
	switch {
	case kept != nil && !c.answered:
		return fmt.Errorf("a recount no caller took, %d ms ago, was not handed to the next caller", r.now-kept.at)
	case kept != nil:
		r.auditKept = nil
		r.faults["audit_kept"]++
	case !c.answered:
		r.auditCallers = append(r.auditCallers, c)
	}
	return r.afterInput()
}

// recountStarted checks a recount the shell hands over: its freeze comes
// no sooner than the cool-down after the last one allows.
func (r *run) recountStarted(j *shell.Job) {
	if at := j.At.UnixMilli(); at < r.auditNotBefore {
		r.fail(fmt.Errorf("a recount was frozen at %d, within the cool-down until %d", at, r.auditNotBefore))
	}
}

// recountEnds is the account of a recount the step runs, before the shell
// hears of it: the cool-down it starts, and the callers that will take it.
func (r *run) recountEnds(p pendingJob) {
	j := p.job
	r.auditTaken = 0
	r.auditExpect, r.auditIndex = p.model, j.Index
	if j.Err() == nil {
		r.auditNotBefore = r.now + max(r.now-j.At.UnixMilli(), 0)
	}
}

// recountEnded keeps the result of a recount that no caller took, and
// drops the one kept before a recount a caller took.
func (r *run) recountEnded(p pendingJob) {
	switch {
	case r.auditTaken > 0:
		r.auditKept = nil
	case p.job.Err() == nil:
		r.auditKept = &keptAudit{model: p.model, index: p.job.Index, at: r.now}
	}
	r.auditExpect, r.auditIndex = nil, 0
	live := r.auditCallers[:0]
	for _, c := range r.auditCallers {
		if c.Waiting() {
			live = append(live, c)
		}
	}
	r.auditCallers = live
}

// checkCounts compares the counts of an audit with the model's.
func checkCounts(m *model, c sku.Counts) error {
	var states [mClosed + 1]int
	for _, res := range m.res {
		states[res.state]++
	}
	soldOut := 0
	for _, q := range m.requests {
		if q.soldOut {
			soldOut++
		}
	}
	got := []int{int(c.Reservations), int(c.PendingPayment), int(c.Paid), int(c.Closed), int(c.Rejected), int(c.RefundsRequired)}
	want := []int{len(m.res), states[mPending], states[mPaid], states[mClosed], soldOut, m.refunds}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Errorf("counts %v (reservations, pending, paid, closed, rejected, refunds), model %v", got, want)
		}
	}
	return nil
}
