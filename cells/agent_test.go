package cells

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/etcdtest"
	"github.com/seckill/seckill/ledger"
)

var (
	quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
	demo  = ledger.SKU{Campaign: "demo", SKU: "sku-1"}
)

// within polls cond every 20 ms until it holds or the generous deadline
// for real processes passes.
func within(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 30 s: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func openCell(t *testing.T, dir, cell string) *actors.Engine {
	t.Helper()
	e, err := actors.Open(actors.Config{DataDir: dir, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	def := sku.Definition{CampaignID: demo.Campaign, SKUID: demo.SKU, StartAt: now.Add(-time.Second).UnixMilli(),
		EndAt: now.Add(time.Hour).UnixMilli(), PaymentWindowMs: 60_000, SaleLimit: 300, ReleaseOnClose: true,
		Cell: cell, CellMapVersion: 1}
	if err := e.Define(context.Background(), def); err != nil && e.SKU(demo.Campaign, demo.SKU) == nil {
		t.Fatal(err)
	}
	return e
}

type cellRun struct {
	agent  *Agent
	cancel context.CancelFunc
	done   chan error
}

func startAgent(t *testing.T, e *actors.Engine, l *ledger.Ledger, cell string) *cellRun {
	t.Helper()
	return startAgentOf(t, e, l, demo, cell, nil)
}

// startAgentOf starts the agent of cell for SKU s with the test's short
// timings (epoch nil: its own).
func startAgentOf(t *testing.T, e *actors.Engine, l *ledger.Ledger, s ledger.SKU, cell string, epoch *CellEpoch) *cellRun {
	t.Helper()
	a, err := NewAgent(AgentConfig{Engine: e, Ledger: l, SKU: s, Cell: cell, Chunk: 20, Epoch: epoch,
		OpTimeout: 500 * time.Millisecond, Interval: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &cellRun{agent: a, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- a.Run(ctx) }()
	return r
}

func (r *cellRun) stop() error { r.cancel(); return <-r.done }

// testLedger dials etcd at addr, the ledger under prefix /t; the client
// is closed when the test ends.
func testLedger(t *testing.T, addr string) *ledger.Ledger {
	t.Helper()
	client, err := ledger.Dial([]string{addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return ledger.New(client, "/t")
}

// publishTest publishes SKU s over cells c1 and c2 (an even map, version
// 1): sale_limit 300, chunks of 20, 40 units each up front.
func publishTest(t *testing.T, l *ledger.Ledger, s ledger.SKU) Map {
	t.Helper()
	m, _ := EvenMap(1, []string{"c1", "c2"})
	op, err := PublishOp(l, s, m)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := l.Publish(ctx, s, 300, 20, []ledger.InitialGrant{{Cell: "c1", Units: 40}, {Cell: "c2", Units: 40}}, op); err != nil {
		t.Fatal(err)
	}
	return m
}

// checkAgrees compares the cell's log with the ledger: the same
// allocations and returns by seq, and the ledger's own invariants.
func checkAgrees(t *testing.T, e *actors.Engine, l *ledger.Ledger, cell string) ledger.State {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The agent may be topping up while we read: the ledger and the log
	// are read one after the other, so a top-up between the two reads
	// shows one allocation more on one side. Read both again until a
	// pair agrees on the count (the agent settles once its pool is above
	// half a chunk); the comparison below is then exact.
	var st ledger.State
	var rep core.CellReport
	for {
		var err error
		if st, err = l.Read(ctx, demo); err != nil {
			t.Fatal(err)
		}
		if rep, err = e.Cell(ctx, demo.Campaign, demo.SKU); err != nil {
			t.Fatal(err)
		}
		if len(rep.Grants) == len(st.Allocs[cell]) && len(rep.Returns) == len(st.Returns[cell]) || ctx.Err() != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if bad := st.Check(); len(bad) != 0 {
		t.Fatalf("ledger: %v", bad)
	}
	if a, err := e.Audit(ctx, demo.Campaign, demo.SKU); err != nil || !a.OK() {
		t.Fatalf("cell audit: %v %v", err, a.Violations)
	}
	same := func(what string, logged []sku.Allocation, stored []ledger.Allocation) {
		if len(logged) != len(stored) {
			t.Fatalf("%s: the log has %d, the ledger %d", what, len(logged), len(stored))
		}
		for i := range stored {
			if fmt.Sprint(logged[i].Seq, logged[i].Ranges) != fmt.Sprint(stored[i].Seq, stored[i].Ranges) {
				t.Fatalf("%s %d: log %v, ledger %v", what, i, logged[i], stored[i])
			}
		}
	}
	same("allocations", rep.Grants, st.Allocs[cell])
	same("returns", rep.Returns, st.Returns[cell])
	if held := st.Held(cell); held != rep.Counts.Granted-rep.Counts.Returned {
		t.Fatalf("the ledger says %s holds %d, its log %d", cell, held, rep.Counts.Granted-rep.Counts.Returned)
	}
	return st
}

// TestAgentAgainstRealEtcd runs one cell (a real engine, fsync on) with its
// agent against a real etcd behind a proxy: initial grant reconciled,
// top-ups as it sells, a partition while the pool runs dry (unrecorded
// SOLD_OUT, top-up pending, then the same seq granted once), a top-up
// whose answer is lost, a return asked by the control plane, and a
// restart that takes a new epoch and fences the old one.
func TestAgentAgainstRealEtcd(t *testing.T) {
	srv := etcdtest.Start(t)
	proxy, err := etcdtest.NewProxy(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	l := testLedger(t, proxy.Addr)
	publishTest(t, l, demo)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if got, err := ReadMap(ctx, l, demo); err != nil || got.Version != 1 {
		t.Fatalf("cell map: %v %v", got.Version, err)
	}

	dir := t.TempDir()
	e := openCell(t, dir, "c1")
	run := startAgent(t, e, l, "c1")
	within(t, "the initial grant reconciled", func() bool {
		rep, err := e.Cell(ctx, demo.Campaign, demo.SKU)
		return err == nil && rep.Epoch == 1 && rep.Counts.Granted >= 40
	})

	user := 0
	var ids []string // accepted reservations, oldest first
	reserve := func() sku.Outcome {
		res, err := e.Reserve(context.Background(), demo.Campaign, demo.SKU, fmt.Sprintf("r%d", user), fmt.Sprintf("u%d", user))
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome == sku.OutcomeAccepted {
			user++
			ids = append(ids, res.Reservation.ReservationID)
		}
		return res.Outcome
	}
	// Sell 100: beyond the initial 40, so top-ups must come.
	within(t, "100 sold", func() bool {
		for user < 100 && reserve() == sku.OutcomeAccepted {
		}
		return user >= 100
	})
	checkAgrees(t, e, l, "c1")

	// A partition while the pool runs dry.
	proxy.Cut()
	within(t, "the pool dry with a top-up pending", func() bool {
		return reserve() == sku.OutcomeSoldOut && run.agent.TopUpPending()
	})
	if _, err := e.Lookup(context.Background(), demo.Campaign, demo.SKU, fmt.Sprintf("r%d", user)); !errors.Is(err, actors.ErrNotFound) {
		t.Fatalf("a celled SOLD_OUT was recorded: %v", err)
	}
	within(t, "etcd marked unreachable", func() bool { return !run.agent.LedgerReachable() })
	proxy.Heal()
	within(t, "selling again", func() bool { return reserve() == sku.OutcomeAccepted })
	checkAgrees(t, e, l, "c1")

	// A top-up whose answer is lost: the transaction commits, the reply
	// is held; the retry (same seq) finds it.
	var once sync.Once
	l.SetBeforeCommit(func() { once.Do(proxy.CutReplies) })
	within(t, "the top-up's answer lost", func() bool {
		reserve()
		return run.agent.Stats().TopUpRetries > 0
	})
	l.SetBeforeCommit(nil)
	// Stock comes back before the link heals (cancels): the top-up in
	// flight is still finished with its seq, with no new need, so the
	// allocation the ledger made reaches the log.
	for _, id := range ids[len(ids)-20:] {
		if _, err := e.Cancel(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	proxy.Heal()
	within(t, "the lost top-up's allocation logged with no new need", func() bool {
		st, err := l.Read(ctx, demo)
		rep, err2 := e.Cell(ctx, demo.Campaign, demo.SKU)
		return err == nil && err2 == nil && !run.agent.TopUpPending() && len(rep.Grants) == len(st.Allocs["c1"])
	})
	checkAgrees(t, e, l, "c1")
	within(t, "selling again after the lost answer", func() bool { return reserve() == sku.OutcomeAccepted })
	checkAgrees(t, e, l, "c1")

	// The control plane asks for 5 units back.
	if err := l.RequestReturn(ctx, demo, "c1", ledger.ReturnRequest{ID: 1, Units: 5}); err != nil {
		t.Fatal(err)
	}
	within(t, "the return credited", func() bool {
		rs, err := l.Returns(ctx, demo, "c1")
		return err == nil && len(rs) == 1 && rs[0].Units() > 0
	})
	checkAgrees(t, e, l, "c1")

	// Restart: the new process takes epoch 2; the old agent is fenced at
	// its next ledger write.
	if err := run.stop(); err != nil {
		t.Fatalf("agent: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openCell(t, dir, "c1")
	defer e.Close()
	run = startAgent(t, e, l, "c1")
	within(t, "epoch 2 recorded", func() bool {
		rep, err := e.Cell(ctx, demo.Campaign, demo.SKU)
		return err == nil && rep.Epoch == 2
	})
	if _, err := l.Allocate(ctx, demo, "c1", 1000, 1, 5); !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("a top-up at the old epoch: %v", err)
	}
	within(t, "selling after the restart", func() bool { return reserve() == sku.OutcomeAccepted })
	if err := run.stop(); err != nil {
		t.Fatalf("agent: %v", err)
	}
	checkAgrees(t, e, l, "c1")
}

// TestOneEpochPerCellProcess: a cell process selling two celled SKUs bumps
// the cell's epoch once, and both SKUs' agents top up under it. (Each
// agent bumping on its own gave the second SKU epoch 2, and the first
// SKU's agent was fenced at its next top-up.)
func TestOneEpochPerCellProcess(t *testing.T) {
	l := testLedger(t, etcdtest.Start(t).Endpoint)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := openCell(t, t.TempDir(), "c1") // defines demo/sku-1
	defer e.Close()
	second := ledger.SKU{Campaign: demo.Campaign, SKU: "sku-2"}
	def := sku.Definition{CampaignID: second.Campaign, SKUID: second.SKU, StartAt: time.Now().Add(-time.Second).UnixMilli(),
		EndAt: time.Now().Add(time.Hour).UnixMilli(), PaymentWindowMs: 60_000, SaleLimit: 300, ReleaseOnClose: true,
		Cell: "c1", CellMapVersion: 1}
	if err := e.Define(ctx, def); err != nil {
		t.Fatal(err)
	}
	epoch := NewCellEpoch(l, "c1")
	var runs []*cellRun
	for _, s := range []ledger.SKU{demo, second} {
		publishTest(t, l, s)
		runs = append(runs, startAgentOf(t, e, l, s, "c1", epoch))
	}
	// Sell 100 of each: beyond the initial 40, so both agents top up.
	for _, s := range []ledger.SKU{demo, second} {
		sold := 0
		within(t, "100 of "+s.SKU+" sold", func() bool {
			for sold < 100 {
				res, err := e.Reserve(ctx, s.Campaign, s.SKU, fmt.Sprintf("r%d", sold), fmt.Sprintf("u%d", sold))
				if err != nil {
					t.Fatal(err)
				}
				if res.Outcome != sku.OutcomeAccepted {
					return false
				}
				sold++
			}
			return true
		})
	}
	for i, r := range runs {
		if err := r.stop(); err != nil {
			t.Fatalf("agent %d: %v", i, err)
		}
	}
	if got, err := l.Epoch(ctx, "c1"); err != nil || got != 1 {
		t.Fatalf("the cell's epoch in etcd: %d %v, want 1 (one bump per process)", got, err)
	}
	for _, s := range []ledger.SKU{demo, second} {
		rep, err := e.Cell(ctx, s.Campaign, s.SKU)
		if err != nil {
			t.Fatal(err)
		}
		allocs, err := l.Allocations(ctx, s, "c1")
		if err != nil {
			t.Fatal(err)
		}
		if rep.Epoch != 1 || len(allocs) < 4 || len(rep.Grants) != len(allocs) {
			t.Fatalf("%s: logged epoch %d, %d grants logged, %d allocations in etcd", s.SKU, rep.Epoch, len(rep.Grants), len(allocs))
		}
	}
}

// TestAgentOfWrittenOffCell: after an operator wrote off a lost cell's
// quota, a process started as that cell on an empty data dir is handed
// none of the old allocations (they were sold, and paid, in the lost log)
// and asks for no top-up: its agent stops with ledger.ErrWrittenOff.
func TestAgentOfWrittenOffCell(t *testing.T) {
	l := testLedger(t, etcdtest.Start(t).Endpoint)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	publishTest(t, l, demo)
	if w, err := l.WriteOffCell(ctx, demo, "c2", time.Now().UnixMilli()); err != nil || w.Units != 40 {
		t.Fatalf("write-off: %+v %v", w, err)
	}
	e := openCell(t, t.TempDir(), "c2")
	defer e.Close()
	run := startAgent(t, e, l, "c2")
	select {
	case err := <-run.done:
		if !errors.Is(err, ledger.ErrWrittenOff) {
			t.Fatalf("agent: %v, want ErrWrittenOff", err)
		}
	case <-time.After(20 * time.Second):
		run.cancel()
		t.Fatal("the agent of a written-off cell is still running")
	}
	rep, err := e.Cell(ctx, demo.Campaign, demo.SKU)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Grants) != 0 || rep.Counts.Available != 0 {
		t.Fatalf("the new process of a written-off cell logged grants %v, available %d", rep.Grants, rep.Counts.Available)
	}
	if allocs, err := l.Allocations(ctx, demo, "c1"); err != nil || len(allocs) != 1 {
		t.Fatalf("c1 is not affected: %v %v", allocs, err)
	}
}

// TestAgentOfLostLog: a cell that sold (its initial grant and a top-up)
// and lost its data dir, started again on an empty one before any
// write-off, is granted nothing: the ledger marks its log as having
// recorded an EPOCH, the new log holds none. Its agent says so (LogLost,
// no Retry-After for its buyers), records no EPOCH, and runs on until the
// operator writes the cell's quota off, which ends it with
// ledger.ErrWrittenOff and leaves the mark as it is.
func TestAgentOfLostLog(t *testing.T) {
	l := testLedger(t, etcdtest.Start(t).Endpoint)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	publishTest(t, l, demo)

	first := openCell(t, t.TempDir(), "c2")
	run := startAgent(t, first, l, "c2")
	sold := 0
	within(t, "c2 sold 50 units, its initial grant and a top-up", func() bool {
		res, err := first.Reserve(ctx, demo.Campaign, demo.SKU, fmt.Sprintf("r%d", sold), fmt.Sprintf("u%d", sold))
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome == sku.OutcomeAccepted {
			sold++
		}
		return sold == 50
	})
	if err := run.stop(); err != nil {
		t.Fatal(err)
	}
	first.Close()
	st, err := l.Read(ctx, demo)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Allocs["c2"]) < 2 || st.Logs["c2"].Epoch != 1 {
		t.Fatalf("after the first life: allocations %v, marks %v; want two or more, and c2's mark at epoch 1", st.Allocs["c2"], st.Logs)
	}

	// The data dir is lost; c2 starts on an empty one.
	second := openCell(t, t.TempDir(), "c2")
	defer second.Close()
	run = startAgent(t, second, l, "c2")
	within(t, "the agent finds the log lost", run.agent.LogLost)
	if run.agent.ExpectsTopUp() {
		t.Fatal("a lost log's cell tells its buyers to retry")
	}
	res, err := second.Reserve(ctx, demo.Campaign, demo.SKU, "again", "u0")
	if err != nil || res.Outcome != sku.OutcomeSoldOut {
		t.Fatalf("a reserve on the lost log's cell: %v %v, want SOLD_OUT", res.Outcome, err)
	}
	rep, err := second.Cell(ctx, demo.Campaign, demo.SKU)
	if err != nil || len(rep.Grants) != 0 || rep.Epoch != 0 {
		t.Fatalf("the new log: grants %v, epoch %d, %v; want none (no EPOCH either: a restart must find it lost again)", rep.Grants, rep.Epoch, err)
	}
	select {
	case err := <-run.done:
		t.Fatalf("the agent of a lost log ended before the write-off: %v", err)
	default:
	}

	if _, err := l.WriteOffCell(ctx, demo, "c2", time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-run.done:
		if !errors.Is(err, ledger.ErrWrittenOff) {
			t.Fatalf("agent after the write-off: %v, want ErrWrittenOff", err)
		}
	case <-time.After(20 * time.Second):
		run.cancel()
		t.Fatal("the agent of a lost log is still running after the write-off")
	}
	if run.agent.LogLost() || run.agent.ExpectsTopUp() {
		t.Fatalf("after the write-off: LogLost %v, ExpectsTopUp %v; want neither", run.agent.LogLost(), run.agent.ExpectsTopUp())
	}
	if st, err := l.Read(ctx, demo); err != nil || st.Logs["c2"].Epoch != 1 || len(st.Check()) != 0 {
		t.Fatalf("after the write-off: marks %v %v, check %v", st.Logs, err, st.Check())
	}
}
