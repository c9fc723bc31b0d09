package httpapi

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/actors"
)

// deadlineGrain is how far apart the shared request deadlines are.
const deadlineGrain = 10 * time.Millisecond

// deadlines hands out the contexts that bound a reserve's wait for the
// engine. Reserves that begin within the same deadlineGrain share one
// context, ending timeout+deadlineGrain after the first of them began: one
// timer per grain instead of one per request. Each request thus waits at
// least timeout and at most timeout+deadlineGrain.
type deadlines struct {
	timeout time.Duration
	mu      sync.Mutex // serializes making a new bucket
	cur     atomic.Pointer[deadlineBucket]
}

// deadlineBucket is one shared context and until when requests may join it.
// An actors.Deadline: the engine's calls wait under it with a plain
// receive, abandoned by its one timer.
type deadlineBucket struct {
	ctx    *actors.Deadline
	joinBy time.Time
}

// get returns a context that ends no sooner than timeout from now.
func (d *deadlines) get() context.Context { return d.getAt(time.Now()) }

// getAt is get for a caller that read the wall clock (time.Now) at now, a
// moment ago: the context ends no sooner than timeout from then.
func (d *deadlines) getAt(now time.Time) context.Context {
	if b := d.cur.Load(); b != nil && now.Before(b.joinBy) {
		return b.ctx
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if b := d.cur.Load(); b != nil && now.Before(b.joinBy) {
		return b.ctx
	}
	ctx := actors.NewDeadline(now.Add(d.timeout + deadlineGrain))
	d.cur.Store(&deadlineBucket{ctx: ctx, joinBy: now.Add(deadlineGrain)})
	return ctx
}
