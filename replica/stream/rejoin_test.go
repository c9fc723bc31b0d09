package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/internal/lockedbuf"
	"github.com/seckill/seckill/replica"
	"github.com/seckill/seckill/snapshot"
	"github.com/seckill/seckill/wal"
)

// A standby that was away while the primary truncated its log behind a
// snapshot gets a base copy (the snapshot, then the log after it), then
// streams; promoted, it holds every reservation. A new standby with an
// empty data dir gets one too.
func TestBaseCopyAfterTruncation(t *testing.T) {
	p := startPair(t, nodeOptions{engine: smallSegments})
	n, px, sb, pdir, sdir := p.n, p.px, p.sb, p.pdir, p.sdir
	ids := reserve(t, n.engine, "c1", "s1", 0, 10)
	caughtUp(t, n, sb, "b")
	px.down()
	eventually(t, "the primary saw the standby go", func() bool { return !status(n.primary, "b").Connected })
	standbyLast, _ := copyLast(sb, "c1", "s1")

	ids = append(ids, reserve(t, n.engine, "c1", "s1", 100, 300)...)
	info, err := n.engine.Snapshot(context.Background(), "c1", "s1")
	if err != nil {
		t.Fatal(err)
	}
	log := n.logs.get("c1", "s1")
	eventually(t, "the primary's log truncated past the standby's copy", func() bool { return log.FirstIndex() > standbyLast+1 })

	px.up()
	caughtUp(t, n, sb, "b")
	if got := value(n.primary.metrics.baseCopies.WithLabelValues("b")); got != 1 {
		t.Fatalf("base copies = %v, want 1", got)
	}
	files, err := snapshot.List(filepath.Join(sdir, "c1", "s1", "snapshots"))
	if err != nil || len(files) != 1 || files[0].Index != info.Index {
		t.Fatalf("the standby's snapshots: %+v %v, want the primary's at %d", files, err, info.Index)
	}
	n.primary.Wait([]string{"b"})
	ids = append(ids, reserve(t, n.engine, "c1", "s1", 1000, 10)...)
	sameRecords(t, pdir, sdir, "c1", "s1")

	// A new, empty standby starts from a base copy too.
	cdir := t.TempDir()
	sc := startStandby(t, cdir, "c", n.addr)
	caughtUp(t, n, sc, "c")
	if got := value(n.primary.metrics.baseCopies.WithLabelValues("c")); got != 1 {
		t.Fatalf("base copies to the new standby = %v, want 1", got)
	}
	sameRecords(t, pdir, cdir, "c1", "s1")
	promote(t, sb, sdir, ids)
}

// Truncation on the primary keeps what a connected standby has not
// acknowledged; beyond MaxRetainRecords it is logged and counted.
func TestTruncationHeldForTheStandby(t *testing.T) {
	p := startPair(t, nodeOptions{maxRetainRecords: 50, engine: smallSegments})
	n, px := p.n, p.px
	acked := n.primary.acked["b"][skuKey{"c1", "s1"}]
	px.holdUp()
	reserve(t, n.engine, "c1", "s1", 0, 20)
	log := n.logs.get("c1", "s1")
	if got := n.primary.retainFrom(skuKey{"c1", "s1"}); got != acked+1 {
		t.Fatalf("retainFrom = %d, want the standby's acknowledged %d + 1", got, acked)
	}
	reserve(t, n.engine, "c1", "s1", 100, 100)
	if got, bound := n.primary.retainFrom(skuKey{"c1", "s1"}), log.DurableIndex()+1-50; got != bound {
		t.Fatalf("retainFrom = %d, want the bound %d", got, bound)
	}
	if got := value(n.primary.metrics.beyondRetention.WithLabelValues("b")); got != 1 {
		t.Fatalf("beyond retention = %v, want 1", got)
	}
	px.releaseUp()
}

// A former primary with a tail its standby never acknowledged rejoins as
// the standby of the promoted one: the tail is cut (logged) and the logs
// agree; promoted again, it holds every acknowledged reservation and not
// the cut one.
func TestFormerPrimaryRejoins(t *testing.T) {
	p := startPair(t, nodeOptions{})
	a, px, sb, adir, bdir := p.n, p.px, p.sb, p.pdir, p.sdir
	a.primary.Wait([]string{"b"})
	ids := reserve(t, a.engine, "c1", "s1", 0, 5)

	px.down()
	log := a.logs.get("c1", "s1")
	last := log.LastIndex()
	ctx, cancel := context.WithCancel(context.Background())
	go a.engine.Reserve(ctx, "c1", "s1", "r-tail", "u-tail")
	eventually(t, "the tail durable on the old primary", func() bool { return log.DurableIndex() > last })
	cancel()
	a.stop()
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}

	b := startPrimary(t, bdir, 2, nodeOptions{})
	ids = append(ids, reserve(t, b.engine, "c1", "s1", 100, 5)...)
	var out lockedbuf.Buffer
	sa, err := NewStandby(StandbyConfig{Set: "rs", Name: "a", DataDir: adir, Primary: b.addr,
		Logger: slog.New(slog.NewTextHandler(&out, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sa.Close() })
	caughtUp(t, b, sa, "a")
	if !strings.Contains(out.String(), "wal: cut records after a rejoin") || value(sa.metrics.cuts) != 1 {
		t.Fatalf("the cut was not logged and counted (%v):\n%s", value(sa.metrics.cuts), out.String())
	}
	sameRecords(t, bdir, adir, "c1", "s1")
	h, err := ReadHistory(filepath.Join(adir, "c1", "s1"))
	if err != nil || len(h) != 2 || h[1] != (replica.EpochStart{Epoch: 2, First: last + 1}) {
		t.Fatalf("the former primary's epoch history: %+v %v", h, err)
	}
	b.primary.Wait([]string{"a"})
	ids = append(ids, reserve(t, b.engine, "c1", "s1", 200, 5)...)
	b.stop()
	e := promote(t, sa, adir, ids)
	if _, err := e.Lookup(context.Background(), "c1", "s1", "r-tail"); !errors.Is(err, actors.ErrNotFound) {
		t.Fatalf("the cut reservation: %v, want not found", err)
	}
}

// A primary refuses a standby that has seen a later epoch: it was deposed.
func TestPrimaryRefusesAStandbyOfALaterEpoch(t *testing.T) {
	pdir, sdir := t.TempDir(), t.TempDir()
	if err := raiseEpoch(sdir, 5); err != nil {
		t.Fatal(err)
	}
	n := startPrimary(t, pdir, 3, nodeOptions{})
	define(t, n.engine, "c1", "s1")
	sb := startStandby(t, sdir, "b", n.addr)
	eventually(t, "the primary refused the standby", func() bool { return value(n.primary.metrics.refused) > 0 })
	if st := status(n.primary, "b"); st.Connected {
		t.Fatalf("a standby of a later epoch connected: %+v", st)
	}
	if l, _ := copyLast(sb, "c1", "s1"); l != 0 {
		t.Fatalf("the standby copied %d records from a deposed primary", l)
	}
}

// A standby refuses a message of a lower epoch than the highest it has
// seen, and makes a higher epoch durable before it acts on its message.
func TestStandbyRefusesALowerEpoch(t *testing.T) {
	sdir := t.TempDir()
	if err := raiseEpoch(sdir, 5); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sb := startStandby(t, sdir, "b", ln.Addr().String())
	send := func(epoch uint64, k skuKey) error {
		nc, err := ln.Accept()
		if err != nil {
			return err
		}
		defer nc.Close()
		m, _, err := readMessage(nc, nil)
		if err != nil || m.typ != msgHello || m.epoch != 5 {
			return fmt.Errorf("hello: %+v %v", m, err)
		}
		b := begin{key: k, mode: beginResume, history: replica.History{{Epoch: epoch, First: 1}}}
		_, err = nc.Write(encodeBegin(epoch, b))
		return err
	}
	if err := send(4, skuKey{"c1", "old"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the stale message refused", func() bool { return value(sb.metrics.refused) == 1 })
	if _, err := os.Stat(filepath.Join(sdir, "c1", "old")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a message of a stale epoch was acted on: %v", err)
	}
	sent := make(chan error, 1)
	go func() { sent <- send(7, skuKey{"c1", "new"}) }()
	eventually(t, "the later epoch's SKU created", func() bool {
		_, err := os.Stat(filepath.Join(sdir, "c1", "new", HistoryFile))
		return err == nil
	})
	if e, err := ReadEpoch(sdir); err != nil || e != 7 {
		t.Fatalf("epoch on disk %d %v, want 7 (before the message was acted on)", e, err)
	}
	if _, err := os.Stat(filepath.Join(sdir, "c1", "new", "wal")); err != nil {
		t.Fatal(err)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
}

// The primary's new snapshots are shipped: the standby keeps the newest
// and truncates its copy as the primary truncates its log, and an engine
// opened on it recovers from them.
func TestSnapshotsAreShipped(t *testing.T) {
	p := startPair(t, nodeOptions{engine: smallSegments, standbyWAL: wal.Options{SegmentSize: 4 << 10}})
	n, sb := p.n, p.sb
	n.primary.Wait([]string{"b"})
	var ids []string
	var last uint64
	for round := 0; ; round++ {
		if round == 20 {
			t.Fatalf("the standby's copy was never truncated")
		}
		ids = append(ids, reserve(t, n.engine, "c1", "s1", 1000*round, 100)...)
		info, err := n.engine.Snapshot(context.Background(), "c1", "s1")
		if err != nil {
			t.Fatal(err)
		}
		last = info.Index
		eventually(t, "the snapshot on the standby", func() bool {
			files, _ := snapshot.List(filepath.Join(p.sdir, "c1", "s1", "snapshots"))
			return len(files) > 0 && len(files) <= standbySnapshotKeep && files[len(files)-1].Index == info.Index
		})
		if first, _ := readLog(t, filepath.Join(p.sdir, "c1", "s1", "wal")); first > 1 {
			break
		}
	}
	files, err := snapshot.List(filepath.Join(p.sdir, "c1", "s1", "snapshots"))
	if err != nil || len(files) > standbySnapshotKeep || files[len(files)-1].Index != last {
		t.Fatalf("the standby's snapshots: %+v %v", files, err)
	}
	sameRecords(t, p.pdir, p.sdir, "c1", "s1")
	pfirst, _ := readLog(t, filepath.Join(p.pdir, "c1", "s1", "wal"))
	if sfirst, _ := readLog(t, filepath.Join(p.sdir, "c1", "s1", "wal")); sfirst > pfirst {
		t.Fatalf("the standby truncated its copy to %d, beyond the primary's first record %d", sfirst, pfirst)
	}
	promote(t, sb, p.sdir, ids)
}

// A standby the primary waits for that needs a base copy (its data dir
// replaced, restarted under its name) gets none while it is waited for:
// the primary reports it (NeedsBase, not caught up) for the role loop to
// drop it from the sync set first; waited for no more, it gets its base
// copy and catches up.
func TestWaitedStandbyGetsNoBaseCopy(t *testing.T) {
	p := startPair(t, nodeOptions{engine: smallSegments})
	n := p.n
	n.primary.Wait([]string{"b"})
	reserve(t, n.engine, "c1", "s1", 0, 10)
	if _, err := n.engine.Snapshot(context.Background(), "c1", "s1"); err != nil {
		t.Fatal(err)
	}
	if err := p.sb.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the primary saw the standby go", func() bool { return !status(n.primary, "b").Connected })
	sb := startStandby(t, t.TempDir(), "b", p.px.addr())
	eventually(t, "the standby reported needing a base copy", func() bool {
		st := status(n.primary, "b")
		return st.Connected && st.NeedsBase
	})
	if st := status(n.primary, "b"); st.CaughtUp {
		t.Fatalf("a standby that needs a base copy counts as caught up: %+v", st)
	}
	if got := value(n.primary.metrics.baseCopies.WithLabelValues("b")); got != 0 {
		t.Fatalf("base copies to a waited standby = %v, want 0", got)
	}
	n.primary.Wait(nil)
	caughtUp(t, n, sb, "b")
	if got := value(n.primary.metrics.baseCopies.WithLabelValues("b")); got != 1 {
		t.Fatalf("base copies once it is not waited for = %v, want 1", got)
	}
	if st := status(n.primary, "b"); st.NeedsBase {
		t.Fatalf("still needs a base copy after it: %+v", st)
	}
}
