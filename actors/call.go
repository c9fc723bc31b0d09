package actors

import (
	"sync"
	"sync/atomic"

	"github.com/seckill/seckill/actors/core"
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
	done       chan struct{} // capacity 1: one send, by release or abandon
	// state is the call's generation (bumped each time it is freed) times
	// 4 plus callPending, callAnswered or callAbandoned: exactly one of
	// the actor's answer and its Deadline's end wakes the caller.
	state atomic.Uint64
}

// The states of a call (call.state's low two bits).
const (
	callPending   = 0
	callAnswered  = 1
	callAbandoned = 2 // its Deadline ended first: its caller is gone
)

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
	c.reset()
	callPool.Put(c)
}

// reset clears an answered call for its next request: a new generation,
// pending (an old Deadline's abandon no longer matches it).
func (c *call) reset() {
	c.Call, c.enqueuedAt = core.Call{}, 0
	c.state.Store((c.state.Load()>>2 + 1) << 2)
}

// gen is the call's generation (Deadline.enlist).
func (c *call) gen() uint64 { return c.state.Load() >> 2 }

// answer releases the call at once with err, without the actor (the inbox
// refused it: closed or full).
func (c *call) answer(err error) {
	c.Err = err
	c.release()
}

// release wakes the caller of an answered call, unless its Deadline
// abandoned it first.
func (c *call) release() {
	for {
		w := c.state.Load()
		if w&3 != callPending {
			return
		}
		if c.state.CompareAndSwap(w, w|callAnswered) {
			c.done <- struct{}{}
			return
		}
	}
}

// abandon wakes the caller of the call of generation gen with its
// context's error, unless it was answered first (or freed since).
func (c *call) abandon(gen uint64) {
	if c.state.CompareAndSwap(gen<<2|callPending, gen<<2|callAbandoned) {
		c.done <- struct{}{}
	}
}

// abandoned reports whether the call's Deadline ended before its answer.
func (c *call) abandoned() bool { return c.state.Load()&3 == callAbandoned }

// wake hands an answered core.Call back to its caller.
func wake(cc *core.Call) { cc.Ref.(*call).release() }
