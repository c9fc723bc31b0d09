package compare

import (
	"context"
	"errors"
	"fmt"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/bench"
)

// The batch cells put seckilld's batch reserve (one HTTP request for many
// attempts of a SKU, decided in one round and one fsync) beside what the
// other targets do with the same batch: Redis runs the same Lua script
// once per attempt in one pipeline (one round trip, the AOF still fsynced
// before the answers: appendfsync always), and the in-process engine takes
// the batch as one call (actors.Engine.ReserveBatch). The null servers
// have no batch form and sit these cells out.

// batchTarget is a Target whose Reservers are bench.BatchReservers.
type batchTarget interface {
	Target
	takesBatches() bool
}

// takesBatches reports whether target runs batch cells.
func takesBatches(target Target) bool {
	t, ok := target.(batchTarget)
	return ok && t.takesBatches()
}

func (t *SeckilldTarget) takesBatches() bool { return true }
func (t *RedisTarget) takesBatches() bool    { return true }

// takesBatches: the engine behind EngineFactory takes batches if it says
// so (the real one does, its Reservers are BatchReservers; a test
// stand-in may not).
func (t *EngineTarget) takesBatches() bool {
	e, ok := t.engine.(interface{ takesBatches() bool })
	return ok && e.takesBatches()
}

func (a actorsEngine) takesBatches() bool { return true }

// ReserveBatch runs the script once per item in one pipeline: one round
// trip, each script atomic on its own, answered in order. The answers come
// back once the AOF holds them (appendfsync always).
func (r *redisReserver) ReserveBatch(ctx context.Context, items []bench.BatchItem) ([]bench.Reply, error) {
	expireAt := redisExpireAt(r.target.options.PaymentWindow)
	pipe := r.target.client.Pipeline()
	for _, it := range items {
		r.target.script.EvalSha(ctx, pipe, r.keys, it.RequestID, it.UserID, "r-"+it.RequestID, expireAt)
	}
	cmds, err := pipe.Exec(ctx)
	if err != nil && len(cmds) != len(items) {
		return nil, err
	}
	replies := make([]bench.Reply, len(items))
	for i, cmd := range cmds {
		values, err := cmd.(interface{ Slice() ([]any, error) }).Slice()
		if err != nil {
			replies[i] = bench.Reply{Outcome: bench.OutcomeError, Detail: "redis: " + err.Error()}
			continue
		}
		if replies[i], err = redisReply(values); err != nil {
			replies[i] = bench.Reply{Outcome: bench.OutcomeError, Detail: err.Error()}
		}
	}
	return replies, nil
}

// BatchReserver is an in-process engine Reserver that also takes batches:
// one answer per item, in order, as its Reserve would give (err per item).
type BatchReserver interface {
	Reserver
	ReserveBatch(ctx context.Context, items []bench.BatchItem) ([]EngineAnswer, error)
}

// EngineAnswer is the engine's answer to one item of a batch (see
// Reserver.Reserve for accepted and soldOut).
type EngineAnswer struct {
	Accepted, SoldOut bool
	Err               error
}

// ReserveBatch asks the engine's batch reserve.
func (r engineReserver) ReserveBatch(ctx context.Context, items []bench.BatchItem) ([]bench.Reply, error) {
	inner, ok := r.inner.(BatchReserver)
	if !ok {
		return nil, errors.New("engine: this engine takes no batches")
	}
	answers, err := inner.ReserveBatch(ctx, items)
	if err != nil {
		return nil, err
	}
	if len(answers) != len(items) {
		return nil, fmt.Errorf("engine: %d answers for %d items", len(answers), len(items))
	}
	replies := make([]bench.Reply, len(items))
	for i, a := range answers {
		switch {
		case a.Err != nil:
			replies[i] = bench.Reply{Outcome: bench.OutcomeError, Detail: a.Err.Error()}
		case a.Accepted:
			replies[i] = bench.Reply{Outcome: bench.OutcomeAccepted, ReservationID: items[i].RequestID}
		case a.SoldOut:
			replies[i] = bench.Reply{Outcome: bench.OutcomeSoldOut}
		default:
			replies[i] = bench.Reply{Outcome: bench.OutcomeAlreadyPurchased}
		}
	}
	return replies, nil
}

// ReserveBatch calls Engine.ReserveBatch; it returns once the decisions
// are durable.
func (r actorsReserver) ReserveBatch(ctx context.Context, items []bench.BatchItem) ([]EngineAnswer, error) {
	batch := make([]actors.ReserveItem, len(items))
	for i, it := range items {
		batch[i] = actors.ReserveItem{RequestID: it.RequestID, UserID: it.UserID}
	}
	results, err := r.e.ReserveBatch(ctx, r.campaignID, r.skuID, batch)
	if err != nil {
		return nil, err
	}
	answers := make([]EngineAnswer, len(results))
	for i, res := range results {
		answers[i] = EngineAnswer{Accepted: res.Result.Outcome == sku.OutcomeAccepted,
			SoldOut: res.Result.Outcome == sku.OutcomeSoldOut, Err: res.Err}
	}
	return answers, nil
}
