package shell

import (
	"errors"
	"sync"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/wal"
)

// batch is the calls of one round that wait on the log, released together:
// their one wal.Waiter. Batches are pooled with their slices.
type batch struct {
	host Host
	rel  Release
}

var batchPool = sync.Pool{New: func() any { return new(batch) }}

// Durable implements wal.Waiter: every record of the batch is now durable
// (err == nil), or the log failed (core.Settle decides each answer). It
// hands the batch to the host on the goroutine that releases the log's waiters, in index
// order, and never blocks.
func (b *batch) Durable(err error) {
	r := &b.rel
	r.Durable = err == nil
	if err != nil {
		core.Settle(r.Calls, err)
		if !errors.Is(err, wal.ErrClosed) {
			r.Failure = err
		}
	}
	b.host.Release(r)
	clear(r.Calls)
	*r = Release{Calls: r.Calls[:0]}
	b.host = nil
	batchPool.Put(b)
}
