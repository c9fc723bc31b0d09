package cells

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/ledger"
)

// countingLedger counts the top-ups asked of a ledger.
type countingLedger struct {
	*ledger.Memory
	allocates int
}

func (l *countingLedger) Allocate(ctx context.Context, s ledger.SKU, cell string, seq, epoch uint64, units uint32) (ledger.Allocation, error) {
	l.allocates++
	return l.Memory.Allocate(ctx, s, cell, seq, epoch, units)
}

// The agent driven by Step over the ledger in memory, on a clock of the
// test's: an exhausted ledger is asked again only once the injected clock
// passed ExhaustedRecheck (the wall clock plays no part), a return another
// cell credits is then granted, and another process taking the epoch
// fences the agent out.
func TestAgentStepsOverMemoryOnItsClock(t *testing.T) {
	ctx := context.Background()
	mem := ledger.NewMemory()
	if _, err := mem.Publish(ctx, demo, 300, 20, []ledger.InitialGrant{{Cell: "c1", Units: 0}, {Cell: "c2", Units: 300}}); err != nil {
		t.Fatal(err)
	}
	l := &countingLedger{Memory: mem}
	e := openCell(t, t.TempDir(), "c1")
	defer e.Close()
	now := time.Unix(1_700_000_000, 0)
	a, err := NewAgent(AgentConfig{Engine: e, Ledger: l, SKU: demo, Cell: "c1", Chunk: 20, ExhaustedRecheck: time.Second,
		Clock: func() time.Time { return now }, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	step := func() time.Duration {
		t.Helper()
		wait, err := a.Step()
		if err != nil {
			t.Fatal(err)
		}
		return wait
	}
	// The epoch, the reconciliation, then a top-up that finds nothing left.
	for range 3 {
		step()
	}
	if !a.Exhausted() || l.allocates != 1 {
		t.Fatalf("exhausted %v after %d top-ups", a.Exhausted(), l.allocates)
	}
	if wait := step(); wait != 100*time.Millisecond || l.allocates != 1 {
		t.Fatalf("asked again before the recheck: wait %s, %d top-ups", wait, l.allocates)
	}
	// c2 gives back 30 tokens; the agent asks once the injected clock says so.
	e2, err := mem.BumpEpoch(ctx, "c2")
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.Credit(ctx, demo, "c2", e2, ledger.Allocation{Cell: "c2", Seq: 1, Epoch: e2, Ranges: []sku.TokenRange{{First: 1, Last: 30}}}); err != nil {
		t.Fatal(err)
	}
	step()
	if l.allocates != 1 {
		t.Fatalf("asked again before the injected clock passed the recheck: %d top-ups", l.allocates)
	}
	now = now.Add(time.Second)
	if wait := step(); wait != 0 || l.allocates != 2 || a.Exhausted() {
		t.Fatalf("after the recheck: wait %s, %d top-ups, exhausted %v", wait, l.allocates, a.Exhausted())
	}
	rep, err := e.Cell(ctx, demo.Campaign, demo.SKU)
	if err != nil || len(rep.Grants) != 1 || rep.Grants[0].Units() != 20 {
		t.Fatalf("the cell's grants: %+v %v", rep.Grants, err)
	}
	// Another process of c1 takes the epoch: the next top-up is fenced.
	if _, err := mem.BumpEpoch(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, err = a.Step(); err != nil {
			break
		}
		// Sell what the cell holds so that it asks for more.
		if _, err := e.Reserve(ctx, demo.Campaign, demo.SKU, fmt.Sprintf("q%d", i), fmt.Sprintf("u%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("after another process took the epoch: %v", err)
	}
}

// grantRefusing is an engine that refuses every GRANT, as a SKU's log
// refuses one past its limit of grants.
type grantRefusing struct{ Engine }

var errGrantRefused = errors.New("sku: too many grants")

func (grantRefusing) Grant(context.Context, string, string, sku.Allocation) error {
	return errGrantRefused
}

// A refusal of the engine that the agent retries for ever is said in the
// cell's log and counted, not only retried: the cell's top-ups stop on it.
func TestAgentReportsWhatTheEngineRefuses(t *testing.T) {
	ctx := context.Background()
	mem := ledger.NewMemory()
	if _, err := mem.Publish(ctx, demo, 300, 20, []ledger.InitialGrant{{Cell: "c1", Units: 20}}); err != nil {
		t.Fatal(err)
	}
	e := openCell(t, t.TempDir(), "c1")
	defer e.Close()
	var logged bytes.Buffer
	a, err := NewAgent(AgentConfig{Engine: grantRefusing{e}, Ledger: mem, SKU: demo, Cell: "c1", Chunk: 20,
		Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // the epoch, then the reconciliation's GRANT of the initial grant, refused
		if _, err := a.Step(); err != nil {
			t.Fatal(err)
		}
	}
	st := a.Stats()
	if st.EngineErrors == 0 || !strings.Contains(st.LastEngineErr, "grant: sku: too many grants") {
		t.Fatalf("stats after refused grants: %+v", st)
	}
	if line := logged.String(); !strings.Contains(line, "the cell's engine refused the agent; retrying") ||
		!strings.Contains(line, "op=grant") || !strings.Contains(line, "too many grants") {
		t.Fatalf("the cell's log says nothing of the refusal:\n%s", line)
	}
}
