package sim

import (
	"fmt"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/admission"
)

// The checks of an admission history (admission.go).
//
// The wait bound. A buyer admitted while the disk's phase p had already
// shown itself (the last commit released before the admission, whose
// latency admission read, ran in p) and answered before any commit of
// another phase touched its wait, waited at most
//
//	max_queue_wait + hi + max(0, hi - max_queue_wait) + two rounds of the actor
//
// where p's fsyncs take lo..hi: max_queue_wait plus one commit, plus the
// part of a commit beyond max_queue_wait on a disk whose commits
// sometimes fit in it. The buyer waits for the actor (at most the round
// under way and its own), then for the rest of the commit under way and
// for its own commit: at most 2·hi. A probe (admitted while nothing
// waited) waits for its own commit alone: hi. Any other buyer was
// admitted while the judged wait, at least the last commit's latency,
// was below max_queue_wait: so lo < max_queue_wait, and 2·hi is within
// the bound. What admission cannot know is not held against it: a buyer
// admitted before a slower phase's first commit came back is not checked.
//
// Steps. Once commits made the judged wait reach max_queue_wait, the
// buyers in flight n group commits later are at most 2^n: admission comes
// back in steps, not all at once.
//
// Recovery. At the end of a fast phase whose last 2·max_queue_wait +
// 100 ms saw no commit of another phase, the last buyer was decided Open:
// admission has come back, in steps, from whatever came before.

// checkWait checks b's wait, now that it is answered.
func (a *admissionRun) checkWait(b *buyer) error {
	if b.call.Result.Outcome != sku.OutcomeAccepted {
		return fmt.Errorf("buyer %s answered %s, want ACCEPTED (stock to spare)", b.call.RequestID, b.call.Result.Outcome)
	}
	wait := a.now - b.admittedAt
	last := len(a.commits) - 1
	p := a.commits[last].phase
	if b.seen < 0 || a.commits[b.seen].phase != p {
		a.faults["wait_unchecked"]++
		return nil
	}
	for i := max(b.firstCommit, 0); i <= last; i++ {
		if a.commits[i].phase != p {
			a.faults["wait_unchecked"]++
			return nil
		}
	}
	a.faults["wait_checked"]++
	ph := &a.phases[p]
	w := a.limits.MaxQueueWait.Microseconds()
	actor := 2 * a.limits.Bound(admissionStock, 0) * a.decideCost
	if bound := w + ph.hi + max(0, ph.hi-w) + actor; wait > bound {
		return fmt.Errorf("buyer %s admitted at %v waited %v in a %s phase (fsync %v..%v): above max_queue_wait %v + hi + max(0, hi - max_queue_wait) + %v of the actor = %v",
			b.call.RequestID, us(b.admittedAt), us(wait), ph.kind, us(ph.lo), us(ph.hi), a.limits.MaxQueueWait, us(actor), us(bound))
	}
	if wait > w {
		a.faults["wait_above_max_queue_wait"]++
	}
	return nil
}

// recoveryWindow is how long a fast phase must have run alone before its
// end for the recovery check: twice max_queue_wait (a commit released in
// it may still have waited behind an older one, admission throttled on
// it), and 100 ms for the ramp's steps (a step is one arrival and one
// fast commit: at most 6 ms; 2 + log2(bound) ≤ 15 steps).
func (a *admissionRun) recoveryWindow() int64 {
	return 2*a.limits.MaxQueueWait.Microseconds() + 100_000
}

// checkRecovered checks, at the end of phase i, that a fast phase that
// ran alone for the recovery window admits Open again.
func (a *admissionRun) checkRecovered(i int) error {
	p := &a.phases[i]
	from := p.end - a.recoveryWindow()
	if p.kind != "fast" || from < p.start {
		return nil
	}
	for j := len(a.commits) - 1; j >= 0 && a.commits[j].end > from; j-- {
		if a.commits[j].phase != i {
			return nil // an older phase's commit ran into the window
		}
	}
	a.faults["recovery_checked"]++
	if a.lastOpenAt < from || a.last.State != admission.Open {
		return fmt.Errorf("a fast phase ran alone from %v to %v, and admission is %s (%d permits, judged wait %v), last admitted Open at %v",
			us(from), us(p.end), a.last.State, a.last.Permits, a.last.Wait, us(a.lastOpenAt))
	}
	return nil
}

// noteThrottle notes a load whose commits make the judged wait reach
// max_queue_wait (the inbox alone below it).
func (a *admissionRun) noteThrottle(ld admission.Load) {
	w := a.limits.MaxQueueWait
	if ld.InboxAge < w && ld.InboxAge+max(ld.CommitWait, ld.CommitLatency) >= w {
		a.throttledAt = int64(ld.Commits)
	}
}

// checkSteps checks the buyers in flight, one just admitted on ld.
func (a *admissionRun) checkSteps(ld admission.Load) error {
	if a.throttledAt < 0 {
		return nil
	}
	n := int64(ld.Commits) - a.throttledAt
	if n < 62 && a.inFlight > 1<<n {
		return fmt.Errorf("%d buyers in flight %d group commits after commits were too slow: more than 2^%d", a.inFlight, n, n)
	}
	return nil
}
