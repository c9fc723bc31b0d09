package actors

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/seckill/seckill/actors/sku"
)

func TestRequestFilterNoFalseNegatives(t *testing.T) {
	f := newRequestFilter(10_000)
	for i := 0; i < 10_000; i++ {
		f.add(fmt.Sprintf("req-%d", i))
	}
	falsePositives := 0
	for i := 0; i < 10_000; i++ {
		if !f.mayContain(fmt.Sprintf("req-%d", i)) {
			t.Fatalf("req-%d added but not found", i)
		}
		if f.mayContain(fmt.Sprintf("other-%d", i)) {
			falsePositives++
		}
	}
	if falsePositives > 100 { // 1%; expected ~0.2%
		t.Fatalf("%d false positives in 10,000", falsePositives)
	}
}

// TestRequestFilterGrowsWithIDs: a filter sized for few ids opens stages
// as ids come, four times larger each, never forgets one, keeps its false
// positives near 1%, and holds memory for the ids added, not for the
// sale_limit it could reach.
func TestRequestFilterGrowsWithIDs(t *testing.T) {
	const ids = 300_000
	f := newRequestFilter(0)
	if n := filterBytes(f); n != filterMinBits/8 {
		t.Fatalf("a new filter holds %d bytes, want %d", n, filterMinBits/8)
	}
	for i := 0; i < ids; i++ {
		f.add(fmt.Sprintf("req-%d", i))
	}
	stages := *f.stages.Load()
	if len(stages) != 4 { // 4 Ki, 16 Ki, 64 Ki and 256 Ki ids
		t.Fatalf("%d stages after %d ids, want 4", len(stages), ids)
	}
	for i := 1; i < len(stages); i++ {
		if stages[i].capacity != 4*stages[i-1].capacity || stages[i].bitsPer != stages[i-1].bitsPer+filterBitsPerStage {
			t.Fatalf("stage %d: %d ids at %d bits after %d at %d", i, stages[i].capacity, stages[i].bitsPer,
				stages[i-1].capacity, stages[i-1].bitsPer)
		}
	}
	// The stages' bits: at most what their ids need rounded up to a power
	// of two, where a filter sized for a sale_limit of 10^9 takes 8 MiB.
	if n := filterBytes(f); n > 8<<20/2 {
		t.Fatalf("%d bytes for %d ids", n, ids)
	}
	for i := 0; i < ids; i++ {
		if !f.mayContain(fmt.Sprintf("req-%d", i)) {
			t.Fatalf("req-%d added but not found", i)
		}
	}
	const others = 200_000
	falsePositives := 0
	for i := 0; i < others; i++ {
		if f.mayContain(fmt.Sprintf("other-%d", i)) {
			falsePositives++
		}
	}
	if falsePositives > others*2/100 { // the stages' sum is ~1% when all are full
		t.Fatalf("%d false positives in %d", falsePositives, others)
	}
}

// TestRequestFilterReadDuringGrowth: the ingress reads the filter while
// the actor adds and opens stages (run with -race); an id added before a
// read began is always found.
func TestRequestFilterReadDuringGrowth(t *testing.T) {
	f := newRequestFilter(0)
	var added atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 50_000; i++ {
			f.add(fmt.Sprintf("req-%d", i))
			added.Store(int64(i + 1))
		}
	}()
	for {
		n := added.Load()
		if n > 0 && !f.mayContain(fmt.Sprintf("req-%d", n-1)) {
			t.Fatalf("req-%d added but not found while the filter grows", n-1)
		}
		select {
		case <-done:
			if len(*f.stages.Load()) < 3 {
				t.Fatalf("%d stages after 50,000 ids", len(*f.stages.Load()))
			}
			return
		default:
		}
	}
}

// filterBytes is the memory of f's stages.
func filterBytes(f *requestFilter) int {
	n := 0
	for _, s := range *f.stages.Load() {
		n += 8 * len(s.words)
	}
	return n
}

// TestDecidedRequestsSurviveRestart: once its answer is out, and after a
// restart, MayKnowRequest says "maybe" for every decided request_id, so
// the ingress asks the actor.
func TestDecidedRequestsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{}
	d := testDef(2)
	e := openTest(t, dir, clock, &d)
	for i := 0; i < 5; i++ {
		id := fmt.Sprintf("r%d", i)
		if _, err := e.Reserve(ctxT(t), "c1", "s1", id, fmt.Sprintf("u%d", i)); err != nil {
			t.Fatal(err)
		}
		if !e.SKU("c1", "s1").MayKnowRequest(id) {
			t.Fatalf("%s answered but not in the filter", id)
		}
	}
	if e.SKU("c1", "s1").MayKnowRequest("never-sent") && e.SKU("c1", "s1").MayKnowRequest("never-sent-2") {
		t.Fatal("filter says maybe for everything")
	}
	e.Close()
	e2 := openTest(t, dir, clock, nil)
	h := e2.SKU("c1", "s1")
	for i := 0; i < 5; i++ {
		if !h.MayKnowRequest(fmt.Sprintf("r%d", i)) {
			t.Fatalf("r%d forgotten after restart", i)
		}
	}
	res, err := e2.Reserve(ctxT(t), "c1", "s1", "r0", "u0")
	if err != nil || res.Outcome != sku.OutcomeAccepted || !res.Duplicate {
		t.Fatalf("repeat of r0 after restart: %v dup=%v %v", res.Outcome, res.Duplicate, err)
	}
}
