package core

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/seckill/seckill/actors/sku"
	"pgregory.net/rapid"
)

// A batch is decided as its items sent one by one in the same order: for
// any history of reserves (repeated request_ids, reused ones, users buying
// twice, the stock running out) cut into batches at random, each item gets
// the result the lone reserve got, the records are the same, and each
// batch waits for the last record of its round.
func TestBatchDecidesAsSingleReserves(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		limit := rapid.Uint32Range(1, 6).Draw(rt, "sale_limit")
		batched := recovered(t, Config{}, ptr(def(limit)))
		single := recovered(t, Config{}, ptr(def(limit)))
		steps := rapid.IntRange(1, 8).Draw(rt, "batches")
		for b := range steps {
			n := rapid.IntRange(1, 12).Draw(rt, "items")
			batch := &Call{Kind: KindReserveBatch, Items: make([]Call, n)}
			var lone []*Call
			for i := range n {
				r := fmt.Sprintf("r%d", rapid.IntRange(0, 15).Draw(rt, "request"))
				u := fmt.Sprintf("u%d", rapid.IntRange(0, 7).Draw(rt, "user"))
				batch.Items[i] = Call{Kind: KindReserve, RequestID: r, UserID: u}
				c := reserve(r, u)
				single.Decide(at(int64(b)), c)
				lone = append(lone, c)
			}
			batched.Decide(at(int64(b)), batch)
			recordsB := append([]sku.Record(nil), batched.Ready().Records...)
			recordsS := append([]sku.Record(nil), single.Ready().Records...)
			if !reflect.DeepEqual(recordsB, recordsS) {
				rt.Fatalf("batch %d: records differ:\nbatch  %+v\nsingle %+v", b, recordsB, recordsS)
			}
			actB, actS := commit(t, batched, nil), commit(t, single, nil)
			if len(actB.Answer) != 0 || actB.Wait == nil || len(actB.Wait.Calls) != 1 || actB.Wait.Calls[0] != batch {
				rt.Fatalf("batch %d: actions %+v, want one waiting call", b, actB)
			}
			if actB.Wait.Index != actS.Wait.Index {
				rt.Fatalf("batch %d: waits for %d, the singles for %d", b, actB.Wait.Index, actS.Wait.Index)
			}
			for i, c := range lone {
				got := batch.Items[i]
				if !reflect.DeepEqual(got.Result, c.Result) || got.Wrote != c.Wrote || got.Err != nil {
					rt.Fatalf("batch %d item %d (%s/%s): %+v wrote %v err %v; alone %+v wrote %v",
						b, i, c.RequestID, c.UserID, got.Result, got.Wrote, got.Err, c.Result, c.Wrote)
				}
			}
		}
		if batched.Machine().Hash() != single.Machine().Hash() {
			rt.Fatal("states differ after the same history")
		}
	})
}

// A failed append settles each item on its own: one that wrote records
// gets RESULT_UNKNOWN, one that wrote none (a duplicate, REQUEST_ID_REUSED)
// UNAVAILABLE; a batch decided while the SKU is failed answers every item
// UNAVAILABLE at once.
func TestBatchSettlesEachItemOnAFailedAppend(t *testing.T) {
	c := recovered(t, Config{}, ptr(def(5)))
	first := reserve("r1", "u1")
	c.Decide(at(1), first)
	commit(t, c, nil)
	batch := &Call{Kind: KindReserveBatch, Items: []Call{
		{Kind: KindReserve, RequestID: "r2", UserID: "u2"},
		{Kind: KindReserve, RequestID: "r1", UserID: "u1"}, // duplicate: no record
		{Kind: KindReserve, RequestID: "r1", UserID: "u9"}, // reused: no record
	}}
	c.Decide(at(2), batch)
	act := commit(t, c, errDisk, 1) // its record reached the log, then the log failed
	if len(act.Answer) != 1 || act.Answer[0] != batch || act.Wait != nil {
		t.Fatalf("actions %+v, want the batch answered at once", act)
	}
	want := []error{ErrResultUnknown, ErrUnavailable, ErrUnavailable}
	for i, w := range want {
		if !errors.Is(batch.Items[i].Err, w) {
			t.Errorf("item %d: %v, want %v", i, batch.Items[i].Err, w)
		}
	}
	later := &Call{Kind: KindReserveBatch, Items: []Call{{Kind: KindReserve, RequestID: "r3", UserID: "u3"}}}
	c.Decide(at(3), later)
	act = commit(t, c, nil)
	if len(act.Answer) != 1 || !errors.Is(later.Err, ErrUnavailable) || !errors.Is(later.Items[0].Err, ErrUnavailable) {
		t.Fatalf("batch on a failed SKU: %v / %v, want UNAVAILABLE", later.Err, later.Items[0].Err)
	}
}

// Items that are not plain reserves, and every item of a batch beyond
// MaxBatchItems, are INVALID and decide nothing.
func TestBatchRefusesBadItems(t *testing.T) {
	c := recovered(t, Config{}, ptr(def(5)))
	batch := &Call{Kind: KindReserveBatch, Items: []Call{
		{Kind: KindPay, Seq: 1},
		{Kind: KindReserve, RequestID: "r1", UserID: "u1"},
		{Kind: KindReserveBatch, Items: []Call{{Kind: KindReserve, RequestID: "r2", UserID: "u2"}}},
	}}
	c.Decide(at(1), batch)
	if rd := c.Ready(); len(rd.Records) != 1 {
		t.Fatalf("%d records, want 1 (the one reserve)", len(rd.Records))
	}
	commit(t, c, nil)
	if batch.Items[0].Result.Outcome != sku.OutcomeInvalid || batch.Items[1].Result.Outcome != sku.OutcomeAccepted ||
		batch.Items[2].Result.Outcome != sku.OutcomeInvalid {
		t.Fatalf("outcomes %s %s %s", batch.Items[0].Result.Outcome, batch.Items[1].Result.Outcome, batch.Items[2].Result.Outcome)
	}
	huge := &Call{Kind: KindReserveBatch, Items: make([]Call, MaxBatchItems+1)}
	for i := range huge.Items {
		huge.Items[i] = Call{Kind: KindReserve, RequestID: fmt.Sprintf("h%d", i), UserID: fmt.Sprintf("h%d", i)}
	}
	c.Decide(at(2), huge)
	if rd := c.Ready(); len(rd.Records) != 0 || huge.Items[0].Result.Outcome != sku.OutcomeInvalid {
		t.Fatalf("a batch beyond the bound decided %d records", len(rd.Records))
	}
}
