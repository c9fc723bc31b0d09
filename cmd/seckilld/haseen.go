package main

import (
	"context"
	"time"

	"github.com/seckill/seckill/replica"
)

// A replica keeps its record in etcd (replica.Seen, without a lease:
// replica/seen.go) so that `seckillctl ha status` can list it as down
// once its member key went with its lease (a kill -9, a machine lost):
// its addresses, its last role and epoch, and when it last wrote them.

// seenEvery is how often a replica writes its record while its role and
// epoch stay as they are: when it stops, its record's time is at most
// this before. A write every few seconds per replica is nothing to etcd,
// and a finer "last seen" would tell an operator nothing more.
const seenEvery = 10 * time.Second

// seenKeys is the part of replica.Etcd that keeps the replica's record.
type seenKeys interface {
	PutSeen(ctx context.Context, s replica.Seen) error
}

// keepSeen writes the replica's record whenever the role or epoch the
// handlers show changes, and every seenEvery, until ctx ends. It runs on a
// goroutine of its own: an etcd slow or unreachable delays no step of the
// role loop. A write refused (replica.ErrNotRegistered: the member key is
// not on this replica's lease yet, or any more) or failed is tried again
// at the next tick.
func (n *haNode) keepSeen(ctx context.Context) {
	ticker := time.NewTicker(n.tick)
	defer ticker.Stop()
	var last replica.Seen
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		s, now := n.state.Load(), time.Now()
		if s.Role == last.Role && s.Epoch == last.Epoch && now.Sub(last.At) < seenEvery {
			continue
		}
		rec := replica.Seen{Member: n.member, Role: s.Role, Epoch: s.Epoch, At: now.UTC().Truncate(time.Millisecond)}
		wctx, cancel := context.WithTimeout(ctx, n.opts.replica.leaseTTL)
		err := n.coord.PutSeen(wctx, rec)
		cancel()
		if err == nil {
			last = rec
		}
	}
}
