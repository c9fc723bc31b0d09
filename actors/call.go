package actors

import (
	"sync"

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
