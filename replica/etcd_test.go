package replica

import (
	"context"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/etcdtest"
	"github.com/seckill/seckill/ledger"
)

// An acquisition that etcd committed but whose answer never reached the
// replica (the call timed out: etcd answered late) put the leader key on
// the replica's own lease, which it keeps alive for its member key: the
// key must not stay held by a replica that does not lead, or the set has
// no primary for as long as that process runs (the others follow the
// key's name, and the replica itself waits for the key to expire).
func TestAnAcquisitionWhoseAnswerWasLostDoesNotHoldTheKey(t *testing.T) {
	srv := etcdtest.Start(t)
	px, err := etcdtest.NewProxy(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)
	c, err := ledger.Dial([]string{px.Addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	const ttl = 2 * time.Second
	e, err := NewEtcd(c, "/test", "rs1", "a", ttl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := e.Register(ctx, Member{HTTP: "http://127.0.0.1:1", Replication: "127.0.0.1:2"}); err != nil {
		t.Fatal(err)
	}
	n := NewNode("a", false, ttl)
	// perform runs the coordinator's part of n's actions (the stream's
	// are nobody's here).
	var perform func(actions []Action)
	perform = func(actions []Action) {
		for _, a := range actions {
			switch a.Kind {
			case ActRead:
				v, err := e.Read(ctx)
				perform(n.Viewed(v, err))
			case ActAcquire:
				h, err := e.Acquire(ctx, a.View)
				perform(n.Acquired(time.Now(), h, err))
			case ActSetSync:
				_, err := e.SetSync(ctx, a.Holding, a.Standbys)
				perform(n.Published(err))
			}
		}
	}

	actions := n.Tick(time.Now(), nil)
	if len(actions) != 1 || actions[0].Kind != ActRead {
		t.Fatalf("first tick: %+v", actions)
	}
	v, err := e.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	actions = n.Viewed(v, err)
	if len(actions) != 1 || actions[0].Kind != ActAcquire {
		t.Fatalf("a free key, the replica eligible: %+v", actions)
	}
	// The acquisition reaches etcd; its answer does not come in time.
	px.CutReplies()
	actx, acancel := context.WithTimeout(ctx, 300*time.Millisecond)
	h, err := e.Acquire(actx, actions[0].View)
	acancel()
	px.Heal()
	if err == nil {
		t.Fatalf("an acquisition whose answer was held: %+v, want an error", h)
	}
	perform(n.Acquired(time.Now(), h, err))
	got, err := c.Get(ctx, e.LeaderKey())
	if err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "a" {
		t.Fatalf("the leader key after the acquisition with no answer: %+v %v, want a's", got, err)
	}

	// The replica keeps its lease alive and ticks: within a few TTLs it
	// leads (or the key is free for another).
	deadline := time.Now().Add(5 * ttl)
	for n.Role() != Primary {
		if time.Now().After(deadline) {
			v, err := e.Read(ctx)
			t.Fatalf("%v after the lost answer: the replica is %v and the leader key names %q (%v)", 5*ttl, n.Role(), v.Leader, err)
		}
		time.Sleep(ttl / 4)
		perform(n.Tick(time.Now(), nil))
	}
}
