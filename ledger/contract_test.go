package ledger

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/etcdtest"
)

// contractLedger is what Ledger and Memory both offer.
type contractLedger interface {
	Epoch(ctx context.Context, cell string) (uint64, error)
	BumpEpoch(ctx context.Context, cell string) (uint64, error)
	Allocate(ctx context.Context, s SKU, cell string, seq, epoch uint64, units uint32) (Allocation, error)
	Credit(ctx context.Context, s SKU, cell string, epoch uint64, ret Allocation) error
	Allocations(ctx context.Context, s SKU, cell string) ([]Allocation, error)
	Returns(ctx context.Context, s SKU, cell string) ([]Allocation, error)
	WriteOffCell(ctx context.Context, s SKU, cell string, atMs int64) (WriteOff, error)
	MarkLog(ctx context.Context, s SKU, cell string, epoch uint64) error
	LogMarked(ctx context.Context, s SKU, cell string) (bool, error)
	RequestReturn(ctx context.Context, s SKU, cell string, req ReturnRequest) error
	ReturnRequest(ctx context.Context, s SKU, cell string) (ReturnRequest, bool, error)
	Read(ctx context.Context, s SKU) (State, error)
}

var (
	_ contractLedger = (*Ledger)(nil)
	_ contractLedger = (*Memory)(nil)
)

// errKind names the error of the ledger's vocabulary err is (or "other").
func errKind(err error) string {
	for _, e := range []error{ErrExists, ErrNotFound, ErrFenced, ErrExhausted, ErrNotOwned, ErrWrittenOff, ErrCorrupt} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	if err != nil {
		return "other: " + err.Error()
	}
	return "ok"
}

// contractScript runs one seeded script of operations on l and returns
// every answer, one line each, and the state at the end (revision
// cleared: each store counts its own). publish is l's Publish.
func contractScript(t *testing.T, l contractLedger, publish func(context.Context, SKU, uint32, uint32, []InitialGrant) ([]Allocation, error), seed uint64) ([]string, State) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rng := rand.New(rand.NewPCG(seed, 7))
	var out []string
	note := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	cells := []string{"c1", "c2", "c3"}
	initial := []InitialGrant{{Cell: "c1", Units: 12}, {Cell: "c2", Units: 0}, {Cell: "c3", Units: 5}}
	allocs, err := publish(ctx, demo, 60, 7, initial)
	note("publish %v %s", allocs, errKind(err))
	_, err = publish(ctx, demo, 60, 7, initial)
	note("publish again %s", errKind(err))
	_, err = publish(ctx, SKU{Campaign: "demo", SKU: "bad"}, 60, 7, []InitialGrant{{Cell: "c1", Units: 61}})
	note("publish beyond sale_limit %s", errKind(err))
	_, err = l.Allocate(ctx, SKU{Campaign: "demo", SKU: "none"}, "c1", 1, 1, 0)
	note("allocate without a ledger %s", errKind(err))
	epochs := map[string]uint64{}
	seqs := map[string]uint64{"c1": 1, "c2": 0, "c3": 1}
	rets := map[string]uint64{}
	for i := range 120 {
		cell := cells[rng.IntN(len(cells))]
		switch rng.IntN(11) {
		case 0:
			e, err := l.BumpEpoch(ctx, cell)
			note("%d bump %s: %d %s", i, cell, e, errKind(err))
			if rng.IntN(2) == 0 { // this process takes the new epoch; else a stale one keeps writing
				epochs[cell] = e
			}
		case 1, 2, 3:
			seq := seqs[cell] + 1
			if rng.IntN(4) == 0 && seqs[cell] > 0 {
				seq = 1 + rng.Uint64N(seqs[cell]) // a retry of a seq asked before
			}
			a, err := l.Allocate(ctx, demo, cell, seq, max(epochs[cell], 1), uint32(rng.IntN(9)))
			note("%d allocate %s/%d at %d: %v %s", i, cell, seq, epochs[cell], a, errKind(err))
			if err == nil {
				seqs[cell] = max(seqs[cell], seq)
			}
		case 4, 5:
			st, err := l.Read(ctx, demo)
			if err != nil {
				t.Fatal(err)
			}
			held := heldOf(st.Allocs[cell], st.Returns[cell])
			var rs []sku.TokenRange
			for tok := uint32(1); tok <= 60 && len(rs) < 3; tok++ {
				if held[tok] == 1 && rng.IntN(3) == 0 {
					rs = append(rs, sku.TokenRange{First: tok, Last: tok})
				}
			}
			if rng.IntN(5) == 0 { // a token not the cell's
				rs = append(rs, sku.TokenRange{First: 60, Last: 60})
			}
			if len(rs) == 0 {
				continue
			}
			seq := rets[cell] + 1
			if rng.IntN(4) == 0 && rets[cell] > 0 {
				seq = rets[cell] // a retry: credited once
			}
			ret := Allocation{Cell: cell, Seq: seq, Epoch: epochs[cell], Ranges: sku.NormalizeRanges(rs)}
			err = l.Credit(ctx, demo, cell, max(epochs[cell], 1), ret)
			note("%d credit %s %v at %d: %s", i, cell, ret.Ranges, epochs[cell], errKind(err))
			if err == nil {
				rets[cell] = max(rets[cell], seq)
			}
		case 6:
			as, err := l.Allocations(ctx, demo, cell)
			rs, err2 := l.Returns(ctx, demo, cell)
			note("%d lists %s: %v %s, %v %s", i, cell, as, errKind(err), rs, errKind(err2))
		case 7:
			req := ReturnRequest{ID: 1 + rng.Uint64N(5), Units: uint32(rng.IntN(4))}
			err := l.RequestReturn(ctx, demo, cell, req)
			got, found, err2 := l.ReturnRequest(ctx, demo, cell)
			note("%d return request %s %v: %s; read %v %v %s", i, cell, req, errKind(err), got, found, errKind(err2))
		case 8:
			e, err := l.Epoch(ctx, cell)
			note("%d epoch %s: %d %s", i, cell, e, errKind(err))
		case 9:
			if i > 90 && cell == "c3" {
				w, err := l.WriteOffCell(ctx, demo, cell, 1234)
				note("%d write off %s: %+v %s", i, cell, w, errKind(err))
			}
		case 10:
			err := l.MarkLog(ctx, demo, cell, max(epochs[cell], 1))
			marked, err2 := l.LogMarked(ctx, demo, cell)
			note("%d mark log %s at %d: %s; marked %v %s", i, cell, epochs[cell], errKind(err), marked, errKind(err2))
		}
	}
	st, err := l.Read(ctx, demo)
	if err != nil {
		t.Fatal(err)
	}
	if bad := st.Check(); len(bad) != 0 {
		t.Fatalf("ledger check: %v", bad)
	}
	st.Revision = 0
	return out, st
}

// TestMemoryKeepsLedgersContract runs the same seeded scripts (publish,
// epochs, stale processes, top-ups and their retries, exhaustion, credits
// and their retries, tokens not owned, return requests, log marks, a
// write-off) on
// the etcd ledger, against a real etcd, and on Memory: every answer and
// the final state must be the same.
func TestMemoryKeepsLedgersContract(t *testing.T) {
	srv := etcdtest.Start(t)
	client, err := Dial([]string{srv.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	for seed := range uint64(4) {
		etcd := New(client, fmt.Sprintf("/contract%d", seed))
		got, gotState := contractScript(t, etcd, func(ctx context.Context, s SKU, saleLimit, chunk uint32, initial []InitialGrant) ([]Allocation, error) {
			return etcd.Publish(ctx, s, saleLimit, chunk, initial)
		}, seed)
		mem := NewMemory()
		want, wantState := contractScript(t, mem, mem.Publish, seed)
		for i := range max(len(got), len(want)) {
			if i >= len(got) || i >= len(want) || got[i] != want[i] {
				t.Fatalf("seed %d: answer %d differs:\netcd:   %v\nmemory: %v", seed, i, at(got, i), at(want, i))
			}
		}
		if !reflect.DeepEqual(gotState, wantState) {
			t.Fatalf("seed %d: final state differs:\netcd:   %+v\nmemory: %+v", seed, gotState, wantState)
		}
	}
}

// logMarkScript walks one cell's log mark through its life on l: absent
// at first, refused under a stale epoch, created under the cell's epoch,
// kept as it is by a repeat (under any epoch), kept by a write-off, which
// then answers ErrWrittenOff to both reads and writes; another cell's
// mark and a SKU without a ledger on the way. It returns every answer and
// the marks at the end.
func logMarkScript(t *testing.T, l contractLedger, publish func(context.Context, SKU, uint32, uint32, []InitialGrant) ([]Allocation, error)) ([]string, map[string]LogMark) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out []string
	note := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	marked := func(what, cell string) {
		ok, err := l.LogMarked(ctx, demo, cell)
		note("%s: %s marked %v %s", what, cell, ok, errKind(err))
	}
	if _, err := publish(ctx, demo, 100, 10, []InitialGrant{{Cell: "c1", Units: 30}, {Cell: "c2", Units: 30}}); err != nil {
		t.Fatal(err)
	}
	none := SKU{Campaign: "demo", SKU: "none"}
	_, err := l.LogMarked(ctx, none, "c1")
	note("marked without a ledger: %s", errKind(err))
	note("mark without a ledger: %s", errKind(l.MarkLog(ctx, none, "c1", 1)))
	note("mark at epoch 0: %s", errKind(l.MarkLog(ctx, demo, "c1", 0)))
	marked("fresh", "c1")
	stale, err := l.BumpEpoch(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	epoch, err := l.BumpEpoch(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	note("mark under the stale epoch %d: %s", stale, errKind(l.MarkLog(ctx, demo, "c1", stale)))
	marked("after the stale mark", "c1")
	note("mark under epoch %d: %s", epoch, errKind(l.MarkLog(ctx, demo, "c1", epoch)))
	marked("marked", "c1")
	marked("another cell", "c2")
	note("mark again: %s", errKind(l.MarkLog(ctx, demo, "c1", epoch)))
	note("mark again under the stale epoch: %s", errKind(l.MarkLog(ctx, demo, "c1", stale)))
	if _, err := l.Allocate(ctx, demo, "c1", 2, epoch, 0); err != nil {
		t.Fatal(err)
	}
	w, err := l.WriteOffCell(ctx, demo, "c1", 1234)
	note("write off: %+v %s", w, errKind(err))
	marked("written off", "c1")
	note("mark when written off: %s", errKind(l.MarkLog(ctx, demo, "c1", epoch)))
	e2, err := l.BumpEpoch(ctx, "c2")
	if err != nil {
		t.Fatal(err)
	}
	note("write off c2 unmarked: %s", errKind(func() error { _, err := l.WriteOffCell(ctx, demo, "c2", 1234); return err }()))
	note("mark c2 when written off: %s", errKind(l.MarkLog(ctx, demo, "c2", e2)))
	marked("written off unmarked", "c2")
	st, err := l.Read(ctx, demo)
	if err != nil {
		t.Fatal(err)
	}
	if bad := st.Check(); len(bad) != 0 {
		t.Fatalf("ledger check: %v", bad)
	}
	return out, st.Logs
}

// TestLogMarkContract: the log mark (logmark.go) answers alike on the
// etcd ledger, against a real etcd, and on Memory, and each answer is the
// mark's rule: created once, under the cell's epoch only; a repeat is
// kept as it stands; a write-off keeps the mark and answers ErrWrittenOff
// to both its read and its write.
func TestLogMarkContract(t *testing.T) {
	srv := etcdtest.Start(t)
	client, err := Dial([]string{srv.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	etcd := New(client, "/logmark")
	got, gotMarks := logMarkScript(t, etcd, func(ctx context.Context, s SKU, saleLimit, chunk uint32, initial []InitialGrant) ([]Allocation, error) {
		return etcd.Publish(ctx, s, saleLimit, chunk, initial)
	})
	mem := NewMemory()
	memGot, memMarks := logMarkScript(t, mem, mem.Publish)
	want := []string{
		"marked without a ledger: " + ErrNotFound.Error(),
		"mark without a ledger: " + ErrNotFound.Error(),
		`mark at epoch 0: other: ledger: mark log: epoch 0, cell "c1"`,
		"fresh: c1 marked false ok",
		"mark under the stale epoch 1: " + ErrFenced.Error(),
		"after the stale mark: c1 marked false ok",
		"mark under epoch 2: ok",
		"marked: c1 marked true ok",
		"another cell: c2 marked false ok",
		"mark again: ok",
		"mark again under the stale epoch: ok",
		"write off: {Cell:c1 Units:40 Allocations:2 Returns:0 AtMs:1234} ok",
		"written off: c1 marked false " + ErrWrittenOff.Error(),
		"mark when written off: " + ErrWrittenOff.Error(),
		"write off c2 unmarked: ok",
		"mark c2 when written off: " + ErrWrittenOff.Error(),
		"written off unmarked: c2 marked false " + ErrWrittenOff.Error(),
	}
	for name, lines := range map[string][]string{"etcd": got, "memory": memGot} {
		if !reflect.DeepEqual(lines, want) {
			t.Errorf("%s answered:\n%s\nwant:\n%s", name, strings.Join(lines, "\n"), strings.Join(want, "\n"))
		}
	}
	wantMarks := map[string]LogMark{"c1": {Cell: "c1", Epoch: 2}}
	if !reflect.DeepEqual(gotMarks, wantMarks) || !reflect.DeepEqual(memMarks, wantMarks) {
		t.Errorf("marks at the end: etcd %v, memory %v, want %v (a write-off keeps the mark)", gotMarks, memMarks, wantMarks)
	}
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(none)"
}

// A malformed return request (written by hand in etcd) reads as ErrCorrupt.
func TestReturnRequestMalformed(t *testing.T) {
	srv := etcdtest.Start(t)
	l := newLedger(t, srv.Endpoint)
	ctx := ctxFor(t, 10*time.Second)
	for _, v := range []string{"{", `{"id":0,"units":3}`} {
		if _, err := l.Client().Put(ctx, l.ReturnRequestKey(demo, "c1"), v); err != nil {
			t.Fatal(err)
		}
		if _, found, err := l.ReturnRequest(ctx, demo, "c1"); found || !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: found %v, %v", v, found, err)
		}
	}
}
