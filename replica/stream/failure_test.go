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

// began reports whether the primary began its copy of k on name's live
// connection (one it has not closed).
func began(p *Primary, name string, k skuKey) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.conns[name]
	if c == nil || c.isClosed() {
		return false
	}
	cs := c.skus[k]
	return cs != nil && cs.mode != modeStart
}

// The cut a reopened log asks of a standby holds until the standby has
// taken it: a connection that ends after the primary decided the cut and
// before the standby made it leaves the standby holding the record the
// primary shipped and never wrote, and its next hello must still be cut
// there, not resumed from where it ends, when the primary has written
// another record at that index in the same epoch.
func TestTheCutOfAReopenedLogSurvivesALostBegin(t *testing.T) {
	var fail atomic.Bool
	p := startPair(t, nodeOptions{engine: func(c *actors.Config) {
		c.ExpiryInterval = 10 * time.Millisecond
		c.LogFailureRetry = time.Millisecond
		c.WAL.OpenStore = func(dir string, o wal.StoreOptions) (wal.Store, error) {
			s, err := wal.OpenTidwallStore(dir, o)
			return failingStore{s, &fail}, err
		}
	}})
	n, px, sb := p.n, p.px, p.sb
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
	// The primary's messages are held from now on: the begin of the cut
	// is decided and never reaches the standby.
	px.CutReplies()
	fail.Store(false)
	eventually(t, "the primary's log opened again", func() bool { return n.logs.get("c1", "s1") != failed })
	px.Reset()
	eventually(t, "the primary began the copy on the standby's new connection", func() bool {
		return began(n.primary, "b", skuKey{"c1", "s1"})
	})
	// The primary writes another record at the index of the lost one.
	var after <-chan reply
	eventually(t, "a record written in place of the lost one", func() bool {
		if after == nil {
			after = reserveLater(n.engine, "after")
		}
		select {
		case r := <-after:
			if r.err != nil {
				after = nil // the SKU still recovering its log
				return false
			}
			t.Fatalf("a reply before the standby acknowledged the record: %+v", r.res)
		default:
		}
		return n.logs.get("c1", "s1").DurableIndex() == last+1
	})
	if c := n.logs.get("c1", "s1").CommitIndex(); c > last {
		t.Fatalf("commit index %d beyond %d before the standby held the record", c, last)
	}
	px.down() // the held begin goes with the connection
	px.up()
	r := <-after
	if r.err != nil {
		t.Fatal(r.err)
	}
	ids = append(ids, r.res.Reservation.ReservationID)
	caughtUp(t, n, sb, "b")
	if v := value(sb.metrics.cuts); v != 1 {
		t.Fatalf("the standby cut %v records, want the 1 the primary never wrote", v)
	}
	sameRecords(t, p.pdir, p.sdir, "c1", "s1")
	e := promote(t, sb, p.sdir, ids)
	if _, err := e.Lookup(context.Background(), "c1", "s1", "lost"); !errors.Is(err, actors.ErrNotFound) {
		t.Fatalf("the record that failed on the primary: %v, want not found", err)
	}
}
