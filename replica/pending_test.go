package replica

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The set's pending lists are written only under the leader key: the
// primary puts and lists one; once its lease ended and another replica
// leads, the deposed primary can neither put nor remove one (ErrNotLeader,
// nothing written), and the new primary lists the one its predecessor
// kept and removes it.
func TestPendingListsAreFencedByTheLeaderKey(t *testing.T) {
	c := startEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := map[string]*Etcd{}
	for _, name := range []string{"a", "b"} {
		e, err := NewEtcd(c, "/test", "rs1", name, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		r[name] = e
	}
	v, err := r["a"].Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ha, err := r["a"].Acquire(ctx, v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r["a"].SetSync(ctx, ha, []string{"b"}); err != nil {
		t.Fatal(err)
	}
	if err := r["a"].PutPending(ctx, ha, "k1", []byte("defs")); err != nil {
		t.Fatal(err)
	}
	if got, err := r["b"].Pending(ctx); err != nil || len(got) != 1 || got[0].Key != "k1" || string(got[0].Value) != "defs" {
		t.Fatalf("the list as another replica reads it: %+v %v", got, err)
	}

	etcdUnderTest{r["a"]}.endLease(t)
	<-r["a"].Lost(ha)
	v, err = r["b"].Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hb, err := r["b"].Acquire(ctx, v)
	if err != nil {
		t.Fatal(err)
	}
	if err := r["a"].PutPending(ctx, ha, "k2", []byte("stale")); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("a deposed primary puts a list: %v, want ErrNotLeader", err)
	}
	if err := r["a"].DeletePending(ctx, ha, "k1"); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("a deposed primary removes a list: %v, want ErrNotLeader", err)
	}
	if got, err := r["b"].Pending(ctx); err != nil || len(got) != 1 || got[0].Key != "k1" {
		t.Fatalf("the new primary's lists after the deposed one's writes: %+v %v", got, err)
	}
	if err := r["b"].DeletePending(ctx, hb, "k1"); err != nil {
		t.Fatal(err)
	}
	if got, err := r["b"].Pending(ctx); err != nil || len(got) != 0 {
		t.Fatalf("lists left once removed: %+v %v", got, err)
	}
}
