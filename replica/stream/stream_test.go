package stream

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/wal"
)

// An acknowledged reservation is on the standby's disk before its reply:
// with the standby's acknowledgements held back, the reply waits (the
// record is durable on both); released, it comes. The copy is the
// primary's log byte for byte, and an engine opened on the standby's data
// dir after Standby.Close recovers every acknowledged reservation.
func TestReplyWaitsForTheStandby(t *testing.T) {
	p := startPair(t, nodeOptions{})
	n, px, sb, pdir, sdir := p.n, p.px, p.sb, p.pdir, p.sdir
	n.primary.Wait([]string{"b"})
	ids := reserve(t, n.engine, "c1", "s1", 0, 20)

	px.holdUp()
	log := n.logs.get("c1", "s1")
	last := log.LastIndex()
	replies := reserveLater(n.engine, "held")
	eventually(t, "the record durable on the primary and on the standby", func() bool {
		_, durable := copyLast(sb, "c1", "s1")
		return log.DurableIndex() > last && durable > last
	})
	notCommitted(t, log, last, replies)
	eventually(t, "the standby's lag shown", func() bool {
		st := status(n.primary, "b")
		// Still caught up: waited for, it holds every committed record.
		return st.LagRecords > 0 && st.LagMillis > 0 && st.CaughtUp && st.Connected && st.Waited
	})
	px.releaseUp()
	r := <-replies
	if r.err != nil || r.res.Outcome != sku.OutcomeAccepted {
		t.Fatalf("held reserve: %v %v", r.res.Outcome, r.err)
	}
	ids = append(ids, r.res.Reservation.ReservationID)
	if st := status(n.primary, "b"); st.LagRecords != 0 || st.LagMillis != 0 || !st.CaughtUp {
		t.Fatalf("after the acknowledgement: %+v", st)
	}

	sameRecords(t, pdir, sdir, "c1", "s1")
	promote(t, sb, sdir, ids)
}

// promote closes a standby and opens an engine on its data dir, which must
// find every reservation in ids; the engine is returned for more checks.
func promote(t *testing.T, sb *Standby, dir string, ids []string) *actors.Engine {
	t.Helper()
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	e, err := actors.Open(actors.Config{DataDir: dir, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	for _, id := range ids {
		if _, err := e.Get(context.Background(), id); err != nil {
			t.Fatalf("the promoted standby lacks acknowledged reservation %s: %v", id, err)
		}
	}
	return e
}

// reply is a reserve's answer.
type reply struct {
	res sku.Result
	err error
}

// reserveLater makes reservation requestID on c1/s1 on a goroutine of its
// own; its answer comes on the channel.
func reserveLater(e *actors.Engine, requestID string) <-chan reply {
	replies := make(chan reply, 1)
	go func() {
		res, err := e.Reserve(context.Background(), "c1", "s1", requestID, requestID+"-user")
		replies <- reply{res, err}
	}()
	return replies
}

// notCommitted fails if a record after last is committed or its reply came.
func notCommitted(t *testing.T, log *wal.Log, last uint64, replies <-chan reply) {
	t.Helper()
	select {
	case r := <-replies:
		t.Fatalf("a reply before the standby acknowledged: %+v", r)
	default:
	}
	if log.CommitIndex() > last {
		t.Fatalf("commit index %d beyond %d before the standby acknowledged", log.CommitIndex(), last)
	}
}

// A standby waited for and disconnected: nothing commits; after Wait(nil)
// (not strict) commits go on; when it reconnects it catches up.
func TestDisconnectedStandby(t *testing.T) {
	p := startPair(t, nodeOptions{})
	n, px, sb, pdir, sdir := p.n, p.px, p.sb, p.pdir, p.sdir
	n.primary.Wait([]string{"b"})
	ids := reserve(t, n.engine, "c1", "s1", 0, 5)

	px.down()
	eventually(t, "the primary saw the standby go", func() bool { return !status(n.primary, "b").Connected })
	log := n.logs.get("c1", "s1")
	last := log.LastIndex()
	replies := reserveLater(n.engine, "alone")
	eventually(t, "the record durable on the primary", func() bool { return log.DurableIndex() > last })
	notCommitted(t, log, last, replies)
	n.primary.Wait(nil)
	if r := <-replies; r.err != nil {
		t.Fatal(r.err)
	}
	ids = append(ids, reserve(t, n.engine, "c1", "s1", 100, 30)...)

	px.up()
	caughtUp(t, n, sb, "b")
	sameRecords(t, pdir, sdir, "c1", "s1")
	n.primary.Wait([]string{"b"})
	ids = append(ids, reserve(t, n.engine, "c1", "s1", 200, 5)...)
	promote(t, sb, sdir, ids)
}

// Strict: with no standby waited for, nothing commits; a standby that
// connects and is waited for lets it commit.
func TestStrictCommitsNothingAlone(t *testing.T) {
	pdir, sdir := t.TempDir(), t.TempDir()
	n := startPrimary(t, pdir, 1, nodeOptions{strict: true})
	done := make(chan error, 1)
	go func() { done <- n.engine.Define(context.Background(), definition("c1", "s1")) }()
	eventually(t, "the definition durable on the primary", func() bool {
		l := n.logs.get("c1", "s1")
		return l != nil && l.DurableIndex() >= 1
	})
	select {
	case err := <-done:
		t.Fatalf("a definition acknowledged in strict mode without a standby: %v", err)
	default:
	}
	startStandby(t, sdir, "b", n.addr)
	eventually(t, "the standby holds the definition", func() bool { return status(n.primary, "b").LagRecords == 0 && status(n.primary, "b").Connected })
	n.primary.Wait([]string{"b"})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	reserve(t, n.engine, "c1", "s1", 0, 3)
	sameRecords(t, pdir, sdir, "c1", "s1")
}

// A SKU defined after the stream started is copied: the standby creates
// its folder.
func TestNewSKUIsCopied(t *testing.T) {
	p := startPair(t, nodeOptions{})
	n, sb, pdir, sdir := p.n, p.sb, p.pdir, p.sdir
	n.primary.Wait([]string{"b"})
	define(t, n.engine, "c2", "late")
	ids := reserve(t, n.engine, "c2", "late", 0, 10)
	sameRecords(t, pdir, sdir, "c2", "late")
	h, err := ReadHistory(filepath.Join(sdir, "c2", "late"))
	if err != nil || len(h) != 1 || h[0].Epoch != 1 || h[0].First != 1 {
		t.Fatalf("the new SKU's epoch history on the standby: %+v %v", h, err)
	}
	promote(t, sb, sdir, ids)
}
