package actors

import (
	"fmt"
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
