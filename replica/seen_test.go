package replica

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A replica's record is written only by the live holder of its name (its
// member key on the writer's lease): not by a replica not registered, nor
// by a second process of the same name, nor once the lease ended; it
// outlives the member key, and is removed by Forget only once the
// replica holds no member key.
func TestSeenIsFencedByTheMemberKey(t *testing.T) {
	c := startEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	replica := func(name string) *Etcd {
		e, err := NewEtcd(c, "/test", "rs1", name, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	a, b, twin := replica("a"), replica("b"), replica("a")
	at := time.UnixMilli(1_700_000_000_000).UTC()
	rec := Seen{Member: Member{HTTP: "http://a", Replication: "a:1"}, Role: "primary", Epoch: 3, At: at}
	if err := a.PutSeen(ctx, rec); !errors.Is(err, ErrNotRegistered) {
		t.Fatalf("a record before the member key: %v, want ErrNotRegistered", err)
	}
	if _, err := a.Register(ctx, rec.Member); err != nil {
		t.Fatal(err)
	}
	if err := a.PutSeen(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := b.PutSeen(ctx, Seen{Role: "standby"}); !errors.Is(err, ErrNotRegistered) {
		t.Fatalf("a record of a replica not registered: %v, want ErrNotRegistered", err)
	}
	if _, err := twin.Register(ctx, Member{HTTP: "http://twin"}); !errors.Is(err, ErrNameTaken) {
		t.Fatalf("a second process of a's name registered: %v", err)
	}
	if err := twin.PutSeen(ctx, Seen{Member: Member{HTTP: "http://twin"}, Role: "candidate"}); !errors.Is(err, ErrNotRegistered) {
		t.Fatalf("a second process of a's name wrote its record: %v, want ErrNotRegistered", err)
	}
	if _, err := Forget(ctx, c, "/test", "rs1", "a"); !errors.Is(err, ErrRegistered) {
		t.Fatalf("Forget of a live replica: %v, want ErrRegistered", err)
	}

	etcdUnderTest{a}.endLease(t)
	seen, err := ReadSeen(ctx, c, "/test", "rs1")
	if err != nil || len(seen) != 1 || seen["a"] != rec {
		t.Fatalf("the records once a's lease ended: %+v %v, want a's as it wrote it", seen, err)
	}
	if err := a.PutSeen(ctx, Seen{Role: "candidate"}); !errors.Is(err, ErrNotRegistered) {
		t.Fatalf("a record written after the lease ended: %v, want ErrNotRegistered", err)
	}
	if had, err := Forget(ctx, c, "/test", "rs1", "a"); err != nil || !had {
		t.Fatalf("Forget of a replica whose lease ended: %v %v", had, err)
	}
	if seen, err := ReadSeen(ctx, c, "/test", "rs1"); err != nil || len(seen) != 0 {
		t.Fatalf("the records after Forget: %+v %v", seen, err)
	}
	if had, err := Forget(ctx, c, "/test", "rs1", "a"); err != nil || had {
		t.Fatalf("Forget of a replica without a record: %v %v", had, err)
	}
}
