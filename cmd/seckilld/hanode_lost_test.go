package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/seckill/seckill/replica"
)

// cutEtcd is the etcd coordinator cut off from the moment cut is closed:
// each read of the set then blocks until its context ends, as a call to
// an etcd that no packet reaches does, and the holding's lease ends when
// the test closes lost (the etcd client counts it down without etcd).
type cutEtcd struct {
	*replica.Etcd
	cut, lost chan struct{}
	blocking  chan struct{} // receives when a read blocks
	ended     chan error    // receives a blocked read's context's end
}

func (c *cutEtcd) Read(ctx context.Context) (replica.View, error) {
	select {
	case <-c.cut:
	default:
		return c.Etcd.Read(ctx)
	}
	c.blocking <- struct{}{}
	<-ctx.Done()
	c.ended <- ctx.Err()
	return replica.View{}, ctx.Err()
}

func (c *cutEtcd) Lost(replica.Holding) <-chan struct{} { return c.lost }

// TestLostEndsACallBlockedOnEtcd: a primary cut off from etcd has its
// runner blocked in a read of the set (bounded by the tick, here 5 s)
// when its lease ends. It must demote then, not once the read gives up:
// another replica may already lead, and this one would answer as primary
// meanwhile. The read's context ends with the lease (context.Canceled,
// not its deadline), and the replica demotes.
func TestLostEndsACallBlockedOnEtcd(t *testing.T) {
	t.Parallel()
	_, l := startLedger(t)
	cut := &cutEtcd{cut: make(chan struct{}), lost: make(chan struct{}), blocking: make(chan struct{}, 16), ended: make(chan error, 16)}
	// A lease of 20 s: a tick of 5 s, far beyond the time the test takes
	// from the read blocking to the lease's end, however loaded the
	// machine.
	a := startTestReplicaOn(t, newCopyNet(), l, func(e *replica.Etcd) haCoordinator { cut.Etcd = e; return cut },
		"rs1", "a", filepath.Join(t.TempDir(), "a"), "--etcd", "unused:1", "--lease-ttl", "20s")
	waitRole(t, a, "primary")
	close(cut.cut)
	select {
	case <-cut.blocking:
	case <-time.After(time.Minute):
		t.Fatal("the primary's runner never read the set after the cut")
	}
	close(cut.lost)
	if err := <-cut.ended; err != context.Canceled {
		t.Fatalf("the read blocked when the lease ended ended with %v, not with the lease", err)
	}
	waitRole(t, a, "candidate")
}
