package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Bounds of the driver.
const (
	// MaxConcurrency bounds the number of workers.
	MaxConcurrency = 65536
	// maxResendsLimit bounds ResendPolicy.MaxResends.
	maxResendsLimit = 1000
)

// ResendPolicy says when the driver sends an attempt's request_id again.
type ResendPolicy struct {
	// QueueFull resends after a 429, waiting the server's Retry-After.
	QueueFull bool
	// Uncertain resends after result_unknown, unavailable or a transport
	// error: the request may have been taken, and only the same request_id
	// can tell without selling twice.
	Uncertain bool
	// SoldOutRetryAfter resends after a SOLD_OUT that carries
	// Retry-After: a celled SKU's cell waiting for a top-up
	// (docs/cells.md); the stock may come within a second.
	SoldOutRetryAfter bool
	// MaxResends bounds the resends of one attempt.
	MaxResends int
	// MinBackoff is the shortest wait before a resend (also when Retry-After is 0).
	MinBackoff time.Duration
	// MaxBackoff caps any wait, Retry-After included.
	MaxBackoff time.Duration
}

// LoadSpec describes one load run.
type LoadSpec struct {
	// Plan lists the attempts.
	Plan *Plan
	// Reservers has one Reserver per SKU index of the plan.
	Reservers []Reserver
	// Concurrency is the number of workers: the closed loop's fixed number of
	// requests in flight, or the open loop's bound on requests in flight.
	Concurrency int
	// Rate, when > 0, selects the open loop: attempt i is due at
	// StartAt + i/Rate, and its latency counts from that intended time.
	Rate float64
	// Duration, when > 0, stops the run when it has elapsed (open loop: no
	// attempt is due after it). A bounded plan also stops at its end.
	Duration time.Duration
	// StartAt is when the first attempt is sent; zero means now.
	StartAt time.Time
	// RequestIDPrefix starts every request_id, to keep runs apart.
	RequestIDPrefix string
	// Resend says when to resend the same request_id.
	Resend ResendPolicy
	// Clock is the time source; nil means the wall clock.
	Clock Clock
	// Batch, when > 1, sends the attempts Batch at a time, one batch per
	// SKU (batch.go); every Reserver must then be a BatchReserver. 0 or 1:
	// one request per attempt.
	Batch int
}

// RequestID returns the request_id of a request number under a prefix.
func RequestID(prefix string, request int64) string {
	var digits [20]byte // one allocation: the concatenation's
	return prefix + "-" + string(strconv.AppendInt(digits[:0], request, 10))
}

// UserID returns the user_id of a user number.
func UserID(user int64) string {
	var digits [20]byte // one allocation: the concatenation's
	return "u" + string(strconv.AppendInt(digits[:0], user, 10))
}

func (s *LoadSpec) validate() error {
	if s.Plan == nil {
		return errors.New("load: no plan")
	}
	if len(s.Reservers) < s.Plan.SKUs() {
		return fmt.Errorf("load: %d reservers for %d SKUs", len(s.Reservers), s.Plan.SKUs())
	}
	if s.Concurrency < 1 || s.Concurrency > MaxConcurrency {
		return fmt.Errorf("load: concurrency %d outside [1, %d]", s.Concurrency, MaxConcurrency)
	}
	if !s.Plan.Bounded() && s.Duration <= 0 {
		return errors.New("load: an unbounded plan needs a duration")
	}
	if s.Rate < 0 {
		return errors.New("load: negative rate")
	}
	if s.Batch < 0 || s.Batch > MaxBatch {
		return fmt.Errorf("load: batch %d outside [0, %d]", s.Batch, MaxBatch)
	}
	for i, r := range s.Reservers {
		if _, ok := r.(BatchReserver); s.Batch > 1 && !ok {
			return fmt.Errorf("load: the reserver of SKU %d (%T) sends no batches", i, r)
		}
	}
	if s.Resend.MaxResends < 0 || s.Resend.MaxResends > maxResendsLimit {
		return fmt.Errorf("load: max resends %d outside [0, %d]", s.Resend.MaxResends, maxResendsLimit)
	}
	return nil
}

// LoadStats is what RunLoad measured about itself.
type LoadStats struct {
	// Started is when the first attempt was due.
	Started time.Time
	// Elapsed runs from Started until the last worker finished.
	Elapsed time.Duration
}

// RunLoad sends the plan through the reservers and records every answer in
// tally. It returns when the plan is exhausted, the duration has elapsed or
// ctx ends; each request is bounded by the Reserver's own timeout.
func RunLoad(ctx context.Context, spec LoadSpec, tally *Tally) (LoadStats, error) {
	if err := spec.validate(); err != nil {
		return LoadStats{}, err
	}
	clock := spec.Clock
	if clock == nil {
		clock = RealClock{}
	}
	start := spec.StartAt
	if start.IsZero() {
		start = clock.Now()
	}
	run := &loadRun{spec: spec, clock: clock, tally: tally, start: start}
	if spec.Duration > 0 {
		run.deadline = start.Add(spec.Duration)
	}
	if spec.Rate > 0 {
		run.interval = float64(time.Second) / spec.Rate
	}
	var workers sync.WaitGroup
	for worker := 0; worker < spec.Concurrency; worker++ {
		workers.Add(1)
		go func() {
			defer workers.Done()
			run.work(ctx, worker)
		}()
	}
	workers.Wait()
	return LoadStats{Started: start, Elapsed: clock.Now().Sub(start)}, ctx.Err()
}

type loadRun struct {
	spec     LoadSpec
	clock    Clock
	tally    *Tally
	start    time.Time
	deadline time.Time // zero: none
	interval float64   // open loop: nanoseconds between intended sends
	next     atomic.Int64
}

// work is one worker's loop: take the next attempt, wait for its due time
// (open loop), send it and its resends.
func (r *loadRun) work(ctx context.Context, worker int) {
	if r.spec.Batch > 1 {
		r.workBatches(ctx, worker)
		return
	}
	if r.interval == 0 && !r.clock.SleepUntil(ctx, r.start) {
		return
	}
	for ctx.Err() == nil {
		index := r.next.Add(1) - 1
		if r.spec.Plan.Bounded() && index >= r.spec.Plan.Len() {
			return
		}
		intended := r.clock.Now()
		if r.interval > 0 {
			intended = r.start.Add(time.Duration(float64(index) * r.interval))
		}
		if !r.deadline.IsZero() && !intended.Before(r.deadline) {
			return
		}
		if r.interval > 0 && !r.clock.SleepUntil(ctx, intended) {
			return
		}
		r.attempt(ctx, worker, r.spec.Plan.At(index), intended)
	}
}

// attempt sends one attempt and, by the resend policy, its resends. The
// first send's latency counts from intended (the open loop's due time); a
// resend's from its own send.
func (r *loadRun) attempt(ctx context.Context, worker int, attempt Attempt, intended time.Time) {
	reserver := r.spec.Reservers[attempt.SKU]
	requestID := RequestID(r.spec.RequestIDPrefix, attempt.Request)
	userID := UserID(attempt.User)
	sentAt := intended
	last := OutcomeError
	defer func() { r.tally.FinishAttempt(worker, last) }()
	for resend := 0; ; resend++ {
		reply, err := reserver.Reserve(ctx, requestID, userID)
		if err != nil {
			reply = Reply{Outcome: OutcomeError, Detail: errorDetail(err)}
		}
		last = reply.Outcome
		now := r.clock.Now()
		r.tally.Record(worker, attempt, reply, now, now.Sub(sentAt))
		wait, again := r.resendWait(reply, resend)
		if !again || ctx.Err() != nil {
			return
		}
		if !r.clock.SleepUntil(ctx, now.Add(wait)) {
			return
		}
		sentAt = r.clock.Now()
	}
}

// resendWait says whether to resend after reply (the resend-th resend so
// far) and how long to wait first.
func (r *loadRun) resendWait(reply Reply, resend int) (time.Duration, bool) {
	policy := r.spec.Resend
	if resend >= policy.MaxResends {
		return 0, false
	}
	var wait time.Duration
	switch {
	case reply.Outcome == OutcomeQueueFull && policy.QueueFull:
		wait = reply.RetryAfter
	case reply.Outcome == OutcomeSoldOut && reply.RetryAfter > 0 && policy.SoldOutRetryAfter:
		wait = reply.RetryAfter
	case reply.Outcome.Transient() && reply.Outcome != OutcomeQueueFull && policy.Uncertain:
		wait = policy.MinBackoff << min(resend, 6)
	default:
		return 0, false
	}
	wait = max(wait, policy.MinBackoff)
	if policy.MaxBackoff > 0 {
		wait = min(wait, policy.MaxBackoff)
	}
	return wait, true
}

// errorDetail reduces an error to a short cause for the error table.
func errorDetail(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return err.Error()
}
