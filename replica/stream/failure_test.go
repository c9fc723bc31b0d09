package stream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/replica"
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

// failingLogs are the options of a node whose SKU logs fail every write
// while fail is set, and open again a millisecond after a failure.
func failingLogs(fail *atomic.Bool) nodeOptions {
	return nodeOptions{engine: func(c *actors.Config) {
		c.ExpiryInterval = 10 * time.Millisecond
		c.LogFailureRetry = time.Millisecond
		c.WAL.OpenStore = func(dir string, o wal.StoreOptions) (wal.Store, error) {
			s, err := wal.OpenTidwallStore(dir, o)
			return failingStore{s, fail}, err
		}
	}}
}

// A batch the primary shipped and then failed to write is on the standby
// only; when the primary's log opens again, the standby reconnects, cuts
// that record (it never committed) and copies what the primary writes in
// its place.
func TestPrimaryLogFailureCutsTheShippedTail(t *testing.T) {
	var fail atomic.Bool
	p := startPair(t, failingLogs(&fail))
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
	p := startPair(t, failingLogs(&fail))
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

// An acknowledgement read from a standby's connection before its SKU's
// log was opened again, and taken after, is not taken: opened capped what
// the standby holds at the log's last record and closed the connection,
// and the acknowledged index now names a record the primary never wrote,
// whose index the next record written takes in the same epoch. Taken, it
// would commit that next record on a standby that holds the other.
func TestAnAckOfAClosedConnectionIsNotTaken(t *testing.T) {
	var fail atomic.Bool
	n := startPrimary(t, t.TempDir(), 1, failingLogs(&fail))
	define(t, n.engine, "c1", "s1")
	reserve(t, n.engine, "c1", "s1", 0, 1)
	p := n.primary
	k := skuKey{"c1", "s1"}
	failed := n.logs.get("c1", "s1")
	last := failed.LastIndex()
	// A live standby "late", waited for, whose writer the test plays: the
	// batches shipped to it stay in its queue.
	local, remote := net.Pipe()
	defer remote.Close()
	c := &primaryConn{p: p, name: "late", nc: local, hello: map[skuKey]helloSKU{}, skus: map[skuKey]*connSKU{},
		queue: newSendQueue(), wake: make(chan struct{}, 1), closed: make(chan struct{})}
	p.mu.Lock()
	c.skus[k] = &connSKU{mode: modeLive, next: last + 1}
	p.conns[c.name], p.seen[c.name] = c, true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.conns, c.name)
		c.closeLocked()
		p.mu.Unlock()
	}()
	p.Wait([]string{"late"})

	fail.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := n.engine.Reserve(ctx, "c1", "s1", "lost", "lost-user"); !errors.Is(err, actors.ErrResultUnknown) {
		t.Fatalf("reserve over a failing write: %v, want ErrResultUnknown", err)
	}
	// The standby's acknowledgement of the record shipped and never
	// written, read by the connection's reader, which has not taken the
	// primary's lock yet when the log opens again.
	read := bufio.NewReader(bytes.NewReader(encodeAcks(1, []ack{{key: k, index: last + 1}})))
	fail.Store(false)
	eventually(t, "the primary's log opened again", func() bool { return n.logs.get("c1", "s1") != failed })
	p.readAcks(c, read, nil) // ends at the reader's end or the closed connection
	// The next record takes the lost one's index: it must not commit, as
	// the standby waited for does not hold it.
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
			t.Fatalf("a reply the standby waited for never acknowledged: %+v", r.res)
		default:
		}
		return n.logs.get("c1", "s1").DurableIndex() == last+1
	})
	if c := n.logs.get("c1", "s1").CommitIndex(); c > last {
		t.Fatalf("commit index %d: a record committed on an acknowledgement of the one it replaced", c)
	}
}

// A begin decided on a SKU's failed log, whose connection is closed by
// the log's opening again before the begin takes the primary's lock, does
// not count the standby as holding what the begin resumed from: the
// failed log's last record was shipped and never written, and the next
// record written takes its index in the same epoch.
func TestABeginOfAClosedConnectionCountsNothing(t *testing.T) {
	var fail atomic.Bool
	n := startPrimary(t, t.TempDir(), 1, failingLogs(&fail))
	define(t, n.engine, "c1", "s1")
	reserve(t, n.engine, "c1", "s1", 0, 1)
	p := n.primary
	k := skuKey{"c1", "s1"}
	failed := n.logs.get("c1", "s1")
	last := failed.LastIndex()
	p.Wait([]string{"late"})

	fail.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := n.engine.Reserve(ctx, "c1", "s1", "lost", "lost-user"); !errors.Is(err, actors.ErrResultUnknown) {
		t.Fatalf("reserve over a failing write: %v, want ErrResultUnknown", err)
	}
	// A standby "late" connects while the log is failed: its hello holds
	// the record shipped and never written (it was connected then), whose
	// writer the test plays.
	local, remote := net.Pipe()
	defer remote.Close()
	c := &primaryConn{p: p, name: "late", nc: local, skus: map[skuKey]*connSKU{},
		hello: map[skuKey]helloSKU{k: {key: k, first: 1, last: last + 1, history: replica.History{{Epoch: 1, First: 1}}}},
		queue: newSendQueue(), wake: make(chan struct{}, 1), closed: make(chan struct{})}
	cs := &connSKU{mode: modeStart}
	p.mu.Lock()
	c.skus[k] = cs
	p.conns[c.name], p.seen[c.name] = c, true
	s := p.skus[k]
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.conns, c.name)
		c.closeLocked()
		p.mu.Unlock()
	}()
	beginQueued = func() {
		fail.Store(false)
		eventually(t, "the primary's log opened again", func() bool { return n.logs.get("c1", "s1") != failed })
	}
	defer func() { beginQueued = nil }()
	p.begin(c, s, cs)

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
			t.Fatalf("a reply the standby waited for never acknowledged: %+v", r.res)
		default:
		}
		return n.logs.get("c1", "s1").DurableIndex() == last+1
	})
	if c := n.logs.get("c1", "s1").CommitIndex(); c > last {
		t.Fatalf("commit index %d: a record committed on a begin that resumed after the one it replaced", c)
	}
}
