package stream

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/wal"
)

// failingStore fails its writes while fail is set.
type failingStore struct {
	wal.Store
	fail *atomic.Bool
}

func (s failingStore) WriteBatch(b *wal.Batch) (int, error) {
	if s.fail.Load() {
		return 0, errors.New("injected write failure")
	}
	return s.Store.WriteBatch(b)
}

// A batch the primary shipped and then failed to write is on the standby
// only; when the primary's log opens again, the standby reconnects, cuts
// that record (it never committed) and copies what the primary writes in
// its place.
func TestPrimaryLogFailureCutsTheShippedTail(t *testing.T) {
	var fail atomic.Bool
	p := startPair(t, nodeOptions{engine: func(c *actors.Config) {
		c.ExpiryInterval = 10 * time.Millisecond
		c.LogFailureRetry = time.Millisecond
		c.WAL.OpenStore = func(dir string, o wal.StoreOptions) (wal.Store, error) {
			s, err := wal.OpenTidwallStore(dir, o)
			return failingStore{s, &fail}, err
		}
	}})
	n, sb := p.n, p.sb
	n.primary.Wait([]string{"b"})
	ids := reserve(t, n.engine, "c1", "s1", 0, 5)
	failed := n.logs.get("c1", "s1")
	last := failed.LastIndex()

	fail.Store(true)
	if _, err := n.engine.Reserve(context.Background(), "c1", "s1", "lost", "lost-user"); !errors.Is(err, actors.ErrResultUnknown) {
		t.Fatalf("reserve over a failing write: %v, want ErrResultUnknown", err)
	}
	eventually(t, "the shipped record durable on the standby", func() bool {
		_, d := copyLast(sb, "c1", "s1")
		return d == last+1
	})
	fail.Store(false)
	eventually(t, "the primary's log opened again", func() bool { return n.logs.get("c1", "s1") != failed })
	eventually(t, "sales again", func() bool {
		res, err := n.engine.Reserve(context.Background(), "c1", "s1", "after", "after-user")
		if err == nil {
			ids = append(ids, res.Reservation.ReservationID)
		}
		return err == nil
	})
	eventually(t, "the standby cut the record", func() bool { return value(sb.metrics.cuts) == 1 })
	caughtUp(t, n, sb, "b")
	sameRecords(t, p.pdir, p.sdir, "c1", "s1")
	e := promote(t, sb, p.sdir, ids)
	if _, err := e.Lookup(context.Background(), "c1", "s1", "lost"); !errors.Is(err, actors.ErrNotFound) {
		t.Fatalf("the record that failed on the primary: %v, want not found", err)
	}
}
