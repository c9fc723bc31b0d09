// Package admission is the rule that decides whether a reserve may go to
// its SKU's actor now: the ingress (package httpapi) asks it for every
// reserve, the simulator (package sim) for every simulated buyer.
//
// A reserve admitted now waits for the SKU's actor (the calls in its
// inbox), then for its records to be durable (group commit: the log's
// waiters). The rule judges that wait from what the SKU publishes,
//
//	wait = inbox age + max(commit wait, commit latency)
//
// where inbox age is the age of the oldest call waiting for the actor,
// commit wait the age of the oldest call waiting for durability (a commit
// that stalls shows there before it ends) and commit latency how long the
// calls released by the last group commit waited (wal.Waits). A reserve
// is admitted only while that wait is below max_queue_wait (but for the
// probe below), and only with a permit: permits in flight per SKU are
// bounded by
//
//	min(available + retry_margin, consumer_rate × max_queue_wait)
//
// (consumer_rate never below Limits.MinRate, so that a cold SKU admits).
//
// Once the inbox's oldest call has waited max_queue_wait the SKU admits
// nothing (QueueFull) until the actor catches up. Once the wait reaches
// max_queue_wait with the inbox alone below it (the log's commits are
// slow, or one stalls), it admits nothing either (Throttled), but for
// one probe: while no call waits anywhere, one reserve at a time goes
// through, so that a commit tells whether the disk is fast again (no
// other work may come to tell it). When the wait falls below max_queue_wait again, the SKU comes back in
// steps (Ramp): one permit, then twice as many after each group commit
// that releases calls, until the bound is reached. Then it is Open.
package admission

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// Limits are the admission parameters.
type Limits struct {
	// MaxQueueWait is the longest a buyer should wait for an answer:
	// admission stops before the wait it judges reaches it.
	MaxQueueWait time.Duration
	// RetryMargin is added to the available stock in the permit bound:
	// admitted reserves may still be refused (a holder clicking again) and
	// leave their units to others.
	RetryMargin int64
	// MinRate (calls/s) is the floor of the consumer rate in the bound.
	MinRate float64
}

// Load is what a SKU publishes about what a reserve admitted now would
// wait behind.
type Load struct {
	// Available is the SKU's durable available stock; Rate its actor's
	// recent processing rate (calls/s).
	Available int64
	Rate      float64
	// InboxAge is the age of the oldest call waiting for the actor (0:
	// none waits).
	InboxAge time.Duration
	// CommitWait is the age of the oldest call waiting for its records to
	// be durable (0: none waits); CommitLatency how long the calls released
	// by the log's last group commit waited; Commits counts those releases
	// (the Ramp's clock). wal.Waits gives all three.
	CommitWait, CommitLatency time.Duration
	Commits                   uint64
}

// State is how a SKU admits.
type State uint8

const (
	// Open admits up to the bound.
	Open State = iota
	// Throttled admits less than the bound, or nothing, because commits
	// are or were slow: only a probe while they are, the Ramp's step
	// after.
	Throttled
	// QueueFull admits nothing: the inbox's oldest call has waited
	// MaxQueueWait.
	QueueFull
)

func (s State) String() string {
	switch s {
	case Open:
		return "OPEN"
	case Throttled:
		return "THROTTLED"
	case QueueFull:
		return "QUEUE_FULL"
	}
	return "State(?)"
}

// Decision is the rule's answer for a SKU at one reading of its Load.
type Decision struct {
	State State
	// Permits is the number of reserves that may be in flight to the SKU
	// now (admitted and not yet answered): 0 admits nothing.
	Permits int64
	// Bound is the permit bound of Limits.Bound, which an Open SKU admits.
	Bound int64
	// Wait is the wait a reserve admitted now would see, and Commit the
	// part of it the log adds: max(CommitWait, CommitLatency).
	Wait, Commit time.Duration
	// Probe is set when the one permit is a probe of a Throttled SKU.
	Probe bool
}

// Tight reports whether an Open SKU's judged wait is above half of
// MaxQueueWait: its status then warns (THROTTLED) before it refuses.
func (l Limits) Tight(d Decision) bool { return d.Wait > l.MaxQueueWait/2 }

// Refusal returns the state a reserve is refused with when the SKU has
// inFlight permits out, and whether it is refused.
func (d Decision) Refusal(inFlight int64) (State, bool) {
	if inFlight < d.Permits {
		return Open, false
	}
	if d.State == Open {
		return QueueFull, true // out of permits
	}
	return d.State, true
}

// Bound returns the number of permits a SKU may have in flight:
// min(available + RetryMargin, max(rate, MinRate) × MaxQueueWait), at
// least 1.
func (l Limits) Bound(available int64, rate float64) int64 {
	rate = max(rate, l.MinRate)
	byRate := max(int64(rate*l.MaxQueueWait.Seconds()), 1)
	return max(min(available+l.RetryMargin, byRate), 1)
}

// Decide applies the rule to a SKU's load ld. r is the SKU's Ramp, which
// Decide moves along (an atomic load, and a store only when the ramp
// starts, steps back or ends): callers on any goroutine share it.
func (l Limits) Decide(ld Load, r *Ramp) Decision {
	d := Decision{Bound: l.Bound(ld.Available, ld.Rate), Commit: commitTerm(ld)}
	d.Wait = ld.InboxAge + d.Commit
	switch {
	case ld.InboxAge >= l.MaxQueueWait:
		d.State = QueueFull
	case d.Wait >= l.MaxQueueWait:
		d.State = Throttled
		r.restart(ld.Commits)
		if ld.InboxAge == 0 && ld.CommitWait == 0 {
			d.Permits, d.Probe = 1, true
		}
	default:
		d.State, d.Permits = Open, d.Bound
		if step, ramping := r.step(ld.Commits, d.Bound); ramping {
			d.State, d.Permits = Throttled, step
		}
	}
	return d
}

// commitTerm is the part of the wait the log adds.
func commitTerm(ld Load) time.Duration {
	if mutantIgnoreCommitLatency {
		return 0
	}
	return max(ld.CommitWait, ld.CommitLatency)
}

// Ramp is a SKU's way back to Open after its commits were too slow: the
// permits it allows start at one when the wait falls below MaxQueueWait
// again and double with each group commit that releases calls (Load.Commits),
// as TCP's slow start doubles its window per round trip: a disk that has
// just recovered is not handed the whole crowd that waited at once. The
// zero Ramp is not ramping.
type Ramp struct {
	// from is Load.Commits + 1 when the ramp last (re)started; 0 while
	// not ramping.
	from atomic.Uint64
}

// restart (re)starts the ramp at commits: the wait reached MaxQueueWait.
func (r *Ramp) restart(commits uint64) {
	if r.from.Load() != commits+1 {
		r.from.Store(commits + 1)
	}
}

// step returns the permits the ramp allows at commits, and whether it is
// still ramping below bound.
func (r *Ramp) step(commits uint64, bound int64) (int64, bool) {
	from := r.from.Load()
	if from == 0 {
		return 0, false
	}
	at := commits + 1
	if at < from { // the log was reopened and counts from 0 again
		r.from.CompareAndSwap(from, at)
		return 1, true
	}
	n := at - from
	if n >= uint64(bits.Len64(uint64(bound-1))) { // 1<<n >= bound
		r.from.CompareAndSwap(from, 0)
		return 0, false
	}
	return 1 << n, true
}
