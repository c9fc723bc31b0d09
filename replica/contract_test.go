package replica

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	_ Coordinator = (*Etcd)(nil)
	_ Coordinator = (*MemoryReplica)(nil)
)

// replicaUnderTest is a Coordinator whose lease a test can end at once
// (the process died, or was paused, and TTL passed).
type replicaUnderTest interface {
	Coordinator
	endLease(t *testing.T)
}

// The contract, run on the real etcd and on the twin alike: the four
// rules of the package documentation, step by step, with three replicas.
func TestCoordinatorContract(t *testing.T) {
	t.Run("etcd", func(t *testing.T) {
		c := startEtcd(t)
		replicas := map[string]replicaUnderTest{}
		for _, name := range []string{"a", "b", "c"} {
			e, err := NewEtcd(c, "/test", "rs1", name, 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.Close() })
			replicas[name] = etcdUnderTest{e}
		}
		twin, err := NewEtcd(c, "/test", "rs1", "a", 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { twin.Close() })
		replicas["a's twin"] = etcdUnderTest{twin}
		contract(t, replicas)
	})
	t.Run("memory", func(t *testing.T) {
		var mu sync.Mutex
		now := time.Unix(1_700_000_000, 0)
		m := NewMemory(func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
		replicas := map[string]replicaUnderTest{}
		for _, name := range []string{"a", "b", "c"} {
			replicas[name] = memoryUnderTest{m.Replica("rs1", name, 2*time.Second)}
		}
		replicas["a's twin"] = memoryUnderTest{m.Replica("rs1", "a", 2*time.Second)}
		contract(t, replicas)
	})
}

type etcdUnderTest struct{ *Etcd }

func (e etcdUnderTest) endLease(t *testing.T) {
	e.mu.Lock()
	s := e.session
	e.mu.Unlock()
	if _, err := e.c.Revoke(context.Background(), s.Lease()); err != nil {
		t.Fatal(err)
	}
}

type memoryUnderTest struct{ *MemoryReplica }

func (m memoryUnderTest) endLease(*testing.T) { m.EndLease() }

func contract(t *testing.T, r map[string]replicaUnderTest) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	read := func(name string) View {
		t.Helper()
		v, err := r[name].Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	acquire := func(name string, v View) Holding {
		t.Helper()
		h, err := r[name].Acquire(ctx, v)
		if err != nil {
			t.Fatalf("%s acquires in %+v: %v", name, v, err)
		}
		return h
	}
	refused := func(name string, v View) {
		t.Helper()
		if _, err := r[name].Acquire(ctx, v); !errors.Is(err, ErrNotEligible) {
			t.Fatalf("%s acquires in %+v: %v, want ErrNotEligible", name, v, err)
		}
	}
	setSync := func(h Holding, standbys ...string) {
		t.Helper()
		if _, err := r[h.Name].SetSync(ctx, h, standbys); err != nil {
			t.Fatalf("%s publishes %v: %v", h.Name, standbys, err)
		}
	}
	lose := func(h Holding) {
		t.Helper()
		r[h.Name].endLease(t)
		select {
		case <-r[h.Name].Lost(h):
		case <-ctx.Done():
			t.Fatalf("%s's lease ended but Lost never said so", h.Name)
		}
		for read("c").Leader != "" { // etcd deletes the key with the lease
			if ctx.Err() != nil {
				t.Fatal("the leader key outlived its lease")
			}
		}
	}

	// Members register on their leases, each with its addresses.
	member := func(name string) Member {
		return Member{HTTP: "http://" + name + ":8080", Replication: name + ":7070"}
	}
	register := func(name string) <-chan struct{} {
		t.Helper()
		gone, err := r[name].Register(ctx, member(name))
		if err != nil {
			t.Fatalf("%s registers: %v", name, err)
		}
		return gone
	}
	members := func() map[string]Member {
		t.Helper()
		ms, err := r["c"].Members(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	aGone := register("a")
	register("b")
	register("c")
	if ms := members(); len(ms) != 3 || ms["b"] != member("b") {
		t.Fatalf("members %+v", ms)
	}
	// A second process started with a's name (a typo of --replica) does
	// not take a's member key from its live lease; a registers again on
	// its own lease as often as it likes.
	if _, err := r["a's twin"].Register(ctx, member("twin")); !errors.Is(err, ErrNameTaken) || !strings.Contains(err.Error(), "http://a:8080") {
		t.Fatalf("a second replica named a registers: %v, want ErrNameTaken naming a's address", err)
	}
	register("a")
	if ms := members(); ms["a"] != member("a") {
		t.Fatalf("a's member key after its twin tried: %+v", ms)
	}

	// A new set: anyone may start it; the first to commit leads epoch 1.
	fresh := read("a")
	if !MayLead(fresh, "a") || !MayLead(fresh, "b") {
		t.Fatalf("a new set: %+v", fresh)
	}
	ha := acquire("a", fresh)
	if ha.Epoch != 1 {
		t.Fatalf("first epoch %d", ha.Epoch)
	}
	refused("b", fresh) // the view it read is gone
	v := read("b")
	if v.Leader != "a" || v.Sync.Primary != "a" || len(v.Sync.Standbys) != 0 || MayLead(v, "b") {
		t.Fatalf("after a's acquisition: %+v", v)
	}
	select {
	case <-r["a"].Lost(ha):
		t.Fatal("Lost while the lease lives")
	default:
	}

	// Rule 1's publication, and its guard: b is published, c is not.
	setSync(ha, "b")
	if _, err := r["a"].SetSync(ctx, ha, []string{"a"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("the primary in its own sync set: %v", err)
	}
	if _, err := r["a"].SetSync(ctx, ha, []string{"b", "b"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a standby twice: %v", err)
	}

	// Rule 2: a's lease ends; c, not in the sync set, may not lead; b may.
	// a's member key went with its lease (the same one); it registers
	// again on a new one.
	lose(ha)
	<-aGone
	if _, ok := members()["a"]; ok {
		t.Fatalf("a's member key outlived its lease: %+v", members())
	}
	register("a")
	if ms := members(); ms["a"] != member("a") {
		t.Fatalf("a registered again: %+v", ms)
	}
	v = read("c")
	if v.Leader != "" || !slices.Equal(v.Sync.Standbys, []string{"b"}) || MayLead(v, "c") || !MayLead(v, "b") {
		t.Fatalf("after a's lease ended: %+v", v)
	}
	refused("c", v)
	hb := acquire("b", v)
	if hb.Epoch != 2 {
		t.Fatalf("b's epoch %d, want 2", hb.Epoch)
	}
	if v := read("a"); v.Sync.Primary != "b" || len(v.Sync.Standbys) != 0 {
		t.Fatalf("b promoted: %+v", v)
	}
	// The deposed primary's writes fail their compare.
	if _, err := r["a"].SetSync(ctx, ha, []string{"c"}); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("the deposed primary's SetSync: %v", err)
	}
	if err := r["a"].Release(ctx, ha, nil); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("the deposed primary's Release: %v", err)
	}

	// A switchover: b hands the lead to a; b itself may not take it back.
	setSync(hb, "a")
	if err := r["b"].Release(ctx, hb, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	v = read("b")
	if MayLead(v, "b") || MayLead(v, "c") || !MayLead(v, "a") {
		t.Fatalf("after the switchover's release: %+v", v)
	}
	refused("b", v)
	ha = acquire("a", v)
	if ha.Epoch != 3 {
		t.Fatalf("a's epoch %d, want 3", ha.Epoch)
	}

	// Rule 3: with the sync set empty only the primary that published it
	// may lead again.
	setSync(ha)
	lose(ha)
	v = read("b")
	if MayLead(v, "b") || MayLead(v, "c") || !MayLead(v, "a") {
		t.Fatalf("an empty sync set: %+v", v)
	}
	refused("b", v)
	if ha = acquire("a", v); ha.Epoch != 4 {
		t.Fatalf("a again: epoch %d, want 4", ha.Epoch)
	}
}
