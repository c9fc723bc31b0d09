package core

import "github.com/seckill/seckill/actors/sku"

// A batch reserve (KindReserveBatch) is one call that carries many
// reserves, as a gateway forwards them: the shell posts it to the SKU's
// inbox once, the core decides its items in order within one round, and
// the round's one waiter releases it. Each item is decided exactly as a
// KindReserve call alone would be (the same Machine.Reserve, the same
// OnRecorded), so a batch is answered what the same reserves sent one by
// one, in the same order and with nothing between them, would have been.

// MaxBatchItems bounds the items of one KindReserveBatch call: the most
// records one call adds to a round (an ACCEPTED or a recorded SOLD_OUT
// writes one each).
const MaxBatchItems = 1000

// decideItems decides the items of a batch call in order at now (Unix
// ms), appending their records to out, and sets the call's Wrote when any
// item wrote. An item that is not a KindReserve, and every item of a batch
// beyond MaxBatchItems, is answered OutcomeInvalid and decides nothing.
func (c *Core) decideItems(now int64, call *Call, out []sku.Record) []sku.Record {
	tooMany := len(call.Items) > MaxBatchItems
	for i := range call.Items {
		it := &call.Items[i]
		if tooMany || it.Kind != KindReserve || it.Tag != "" || len(it.Items) > 0 {
			it.Result = sku.Result{Outcome: sku.OutcomeInvalid}
			continue
		}
		first := len(out)
		out = c.decide(now, it, out)
		it.Wrote = len(out) > first
		call.Wrote = call.Wrote || it.Wrote
	}
	return out
}

// settleItems gives each item of a batch call the Err that Settle gives a
// call: unknown (its ErrResultUnknown) for one that wrote records,
// ErrUnavailable for one that did not.
func settleItems(c *Call, unknown error) {
	for i := range c.Items {
		if c.Items[i].Wrote {
			c.Items[i].Err = unknown
		} else {
			c.Items[i].Err = ErrUnavailable
		}
	}
}

// undecided answers a call that was not decided, or whose records were
// never appended, ErrUnavailable: nothing was done (each item of a batch
// too).
func undecided(c *Call) {
	c.Err = ErrUnavailable
	for i := range c.Items {
		c.Items[i].Err = ErrUnavailable
	}
}
