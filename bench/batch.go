package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/seckill/seckill/client"
)

// MaxBatch bounds LoadSpec.Batch (--batch): the server's batch limit.
const MaxBatch = 1000

// BatchItem is one attempt of a batch: the arguments of Reserver.Reserve.
type BatchItem struct {
	RequestID, UserID string
}

// BatchReserver is a Reserver that can also send many attempts for its SKU
// at once, as a gateway forwarding admitted buyers does (seckilld's
// POST .../reservations:batch, a Redis pipeline, the engine's
// ReserveBatch). ReserveBatch answers one Reply per item, in order; a
// non-nil error means no item got an answer.
type BatchReserver interface {
	Reserver
	ReserveBatch(ctx context.Context, items []BatchItem) ([]Reply, error)
}

// workBatches is a worker's loop with LoadSpec.Batch > 1: it takes Batch
// consecutive attempts of the plan, and sends them as one batch per SKU.
// In the open loop a batch leaves when its last attempt is due (a gateway
// fills a batch, then forwards it); each attempt's latency counts from its
// own due time.
func (r *loadRun) workBatches(ctx context.Context, worker int) {
	if r.interval == 0 && !r.clock.SleepUntil(ctx, r.start) {
		return
	}
	size := int64(r.spec.Batch)
	attempts := make([]Attempt, 0, size)
	intended := make([]time.Time, 0, size)
	for ctx.Err() == nil {
		first := r.next.Add(size) - size
		attempts, intended = attempts[:0], intended[:0]
		for index := first; index < first+size; index++ {
			if r.spec.Plan.Bounded() && index >= r.spec.Plan.Len() {
				break
			}
			due := r.clock.Now()
			if r.interval > 0 {
				due = r.start.Add(time.Duration(float64(index) * r.interval))
			}
			if !r.deadline.IsZero() && !due.Before(r.deadline) {
				break
			}
			attempts = append(attempts, r.spec.Plan.At(index))
			intended = append(intended, due)
		}
		if len(attempts) == 0 {
			return
		}
		if r.interval > 0 && !r.clock.SleepUntil(ctx, intended[len(intended)-1]) {
			return
		}
		for sku := range r.spec.Reservers {
			r.batch(ctx, worker, sku, attempts, intended)
		}
	}
}

// batch sends the attempts of one SKU among attempts as one batch and, by
// the resend policy, resends the items that need it together.
func (r *loadRun) batch(ctx context.Context, worker, sku int, attempts []Attempt, intended []time.Time) {
	var mine []Attempt
	var sentAt []time.Time
	for i, a := range attempts {
		if a.SKU == sku {
			mine = append(mine, a)
			sentAt = append(sentAt, intended[i])
		}
	}
	if len(mine) == 0 {
		return
	}
	reserver := r.spec.Reservers[sku].(BatchReserver) // checked by validate
	items := make([]BatchItem, len(mine))
	for i, a := range mine {
		items[i] = BatchItem{RequestID: RequestID(r.spec.RequestIDPrefix, a.Request), UserID: UserID(a.User)}
	}
	for resend := 0; len(mine) > 0; resend++ {
		replies, err := reserver.ReserveBatch(ctx, items)
		if err == nil && len(replies) != len(items) {
			err = fmt.Errorf("%d replies for %d items", len(replies), len(items))
		}
		now := r.clock.Now()
		var again []int
		var againLast []Outcome // the last outcome of each attempt in again
		var wait time.Duration
		for i := range mine {
			reply := Reply{Outcome: OutcomeError}
			if err != nil {
				reply.Detail = errorDetail(err)
			} else {
				reply = replies[i]
			}
			r.tally.Record(worker, mine[i], reply, now, now.Sub(sentAt[i]))
			if w, resend := r.resendWait(reply, resend); resend && ctx.Err() == nil {
				again = append(again, i)
				againLast = append(againLast, reply.Outcome)
				wait = max(wait, w)
			} else {
				r.tally.FinishAttempt(worker, reply.Outcome)
			}
		}
		if len(again) == 0 {
			return
		}
		if !r.clock.SleepUntil(ctx, now.Add(wait)) {
			for _, last := range againLast {
				r.tally.FinishAttempt(worker, last)
			}
			return
		}
		resent := r.clock.Now()
		for j, i := range again {
			mine[j], items[j], sentAt[j] = mine[i], items[i], resent
		}
		mine, items, sentAt = mine[:len(again)], items[:len(again)], sentAt[:len(again)]
	}
}

// ReserveBatch sends items as one batch reserve (package client's
// ReserveBatch) and classifies each item's answer as Reserve classifies a
// single one.
func (r *SKUReserver) ReserveBatch(ctx context.Context, items []BatchItem) ([]Reply, error) {
	batch := make([]client.BatchItem, len(items))
	for i, it := range items {
		batch[i] = client.BatchItem{RequestID: it.RequestID, UserID: it.UserID}
	}
	results, err := r.api.ReserveBatch(ctx, r.campaignID, r.skuID, batch)
	if err != nil {
		if _, _, terr := status(err); terr != nil {
			return nil, terr
		}
		return nil, fmt.Errorf("batch: %w", err)
	}
	replies := make([]Reply, len(items))
	for i, res := range results {
		if replies[i], err = replyOf(res.Reservation, res.Err); err != nil {
			return nil, err
		}
	}
	return replies, nil
}
