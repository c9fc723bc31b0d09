package actors

import (
	"sync"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/purchase"
	"github.com/seckill/seckill/wal"
)

// call is one request to a SKU actor and, once answered, its reply: the
// core's Call (arguments and reply, see core.Call) plus what the shell
// needs to hand it across goroutines. The actor decides it, appends its
// records and releases it with its batch once the log is durable up to
// the last record the batch rests on. Calls are pooled; a call abandoned by
// its caller (context done) is not returned to the pool, since the actor
// may still answer it.
type call struct {
	core.Call
	enqueuedAt int64         // monotonic ns, the sojourn stamp
	done       chan struct{} // capacity 1
}

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

func newCall(kind core.Kind) *call {
	c := callPool.Get().(*call)
	c.Kind, c.Ref = kind, c
	return c
}

// newReportCall returns a call of a kind that replies with a core.Report.
func newReportCall(kind core.Kind) *call {
	c := newCall(kind)
	c.Report = new(core.Report)
	return c
}

// free returns an answered call to the pool.
func (c *call) free() {
	done := c.done
	*c = call{done: done}
	callPool.Put(c)
}

// answer releases the call at once with err, without the actor (the inbox
// refused it: closed or full).
func (c *call) answer(err error) {
	c.Err = err
	c.done <- struct{}{}
}

// wake hands an answered core.Call back to its caller.
func wake(cc *core.Call) { cc.Ref.(*call).done <- struct{}{} }

// batch is the calls of one round that wait on the log, released together:
// it is their one wal.Waiter. Batches are pooled with their slices.
type batch struct {
	calls []*core.Call
	// published on release: the SKU's state as of the batch's last record
	owner *SKU
	view  durableView
	log   *wal.Log // awaited: a failure of it is reported to the actor
	// events are the purchases the batch's records made or closed, for
	// the campaign's purchase registry (purchases.go); nil for a SKU of a
	// campaign whose purchase_limit is "sku".
	events []purchase.Event
}

var batchPool = sync.Pool{New: func() any { return new(batch) }}

// Durable implements wal.Waiter: every record of the batch is now fsynced
// (err == nil), or the log failed (core.Settle decides each answer). It
// publishes the SKU's durable state, then wakes each caller. It runs on the
// log's releaser goroutine, in index order, and never blocks (each done
// channel has room for the one reply).
func (b *batch) Durable(err error) {
	if err == nil {
		b.owner.publish(b.view)
		b.owner.applyPurchaseEvents(b.events)
	} else {
		b.owner.logFailed(b.log, err)
	}
	core.Settle(b.calls, err)
	for i, c := range b.calls {
		wake(c)
		b.calls[i] = nil
	}
	b.calls, b.owner, b.log, b.events = b.calls[:0], nil, nil, nil
	batchPool.Put(b)
}
