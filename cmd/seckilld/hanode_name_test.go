package main

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/seckill/seckill/replica"
)

// TestReplicaNameInUseEndsTheSecond: a second seckilld started with the
// --replica name of a live replica (a typo on a new machine) neither takes
// its member key in etcd (the router would send the set's buyers to it,
// and when it stops the key would go with its lease, leaving the primary
// unreachable through the router) nor takes any role: it ends with
// replica.ErrNameTaken once the name stayed held three lease TTLs (and at
// least nameWaitFloor), and the first replica leads on, still registered
// at its own address.
func TestReplicaNameInUseEndsTheSecond(t *testing.T) {
	_, l := startLedger(t)
	c := newCopyNet()
	dir := t.TempDir()
	a := startTestReplica(t, c, l, "a", filepath.Join(dir, "a"))
	waitRole(t, a, "primary")
	twin := startTestReplica(t, c, l, "a", filepath.Join(dir, "twin"))
	var err error
	select {
	case err = <-twin.done:
		twin.stop()
		twin.stop = nil
	case <-time.After(time.Minute):
		t.Fatal("a second replica named a still runs after a minute")
	}
	if !errors.Is(err, replica.ErrNameTaken) {
		t.Fatalf("the second replica named a ended with %v, want ErrNameTaken", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ms, err := a.coord.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ms["a"].HTTP != a.url {
		t.Fatalf("a's member key: %+v, want a's address %s", ms["a"], a.url)
	}
	if h := waitRole(t, a, "primary"); h.Epoch != 1 {
		t.Fatalf("a after its twin: %+v, want primary of epoch 1", h)
	}
}
