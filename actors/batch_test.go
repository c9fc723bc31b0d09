package actors

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckill/seckill/actors/sku"
	"pgregory.net/rapid"
)

// On the real engine, a batch answers each item what Engine.Reserve gave
// the same request sent alone, in the same order: two engines with the
// same reservation id key, one fed batches and one fed the items one by
// one, give equal results (reservation ids, token ids, expire_at,
// Duplicate) and reach the same state.
func TestReserveBatchAnswersAsSingleReserves(t *testing.T) {
	clock := &fakeClock{}
	clock.Set(t0)
	open := func() *Engine {
		return openWith(t, Config{DataDir: t.TempDir(), Clock: clock.Now, ManualTick: true, Logger: quiet, Rand: fixedRand{}})
	}
	batched, single := open(), open()
	var n atomic.Int64
	rapid.Check(t, func(rt *rapid.T) {
		d := testDef(rapid.Uint32Range(1, 6).Draw(rt, "sale_limit"))
		d.SKUID = fmt.Sprintf("s%d", n.Add(1))
		for _, e := range []*Engine{batched, single} {
			if err := e.Define(ctxT(t), d); err != nil {
				rt.Fatal(err)
			}
		}
		for b := range rapid.IntRange(1, 5).Draw(rt, "batches") {
			items := make([]ReserveItem, rapid.IntRange(1, 10).Draw(rt, "items"))
			for i := range items {
				items[i] = ReserveItem{
					RequestID: fmt.Sprintf("r%d", rapid.IntRange(0, 12).Draw(rt, "request")),
					UserID:    fmt.Sprintf("u%d", rapid.IntRange(0, 6).Draw(rt, "user")),
				}
			}
			got, err := batched.ReserveBatch(ctxT(t), d.CampaignID, d.SKUID, items)
			if err != nil || len(got) != len(items) {
				rt.Fatalf("batch %d: %d results, %v", b, len(got), err)
			}
			for i, it := range items {
				res, err := single.Reserve(ctxT(t), d.CampaignID, d.SKUID, it.RequestID, it.UserID)
				if !reflect.DeepEqual(got[i], ItemResult{Result: res, Err: err}) {
					rt.Fatalf("batch %d item %d %+v: %+v; alone %+v %v", b, i, it, got[i], res, err)
				}
			}
		}
		hb, err1 := batched.StateHash(ctxT(t), d.CampaignID, d.SKUID)
		hs, err2 := single.StateHash(ctxT(t), d.CampaignID, d.SKUID)
		if err1 != nil || err2 != nil || hb != hs {
			rt.Fatalf("states differ after the same history (%v %v)", err1, err2)
		}
	})
}

// A batch is one call: the actor decides it once (one sample of the
// reserve_batch processing time, none of reserve), its 16 records appended
// in one round. The inbox counts it as
// its items: a batch larger than the room left is refused whole with
// ErrBusy, and the queue figures and the rate count items.
func TestReserveBatchIsOneCallCountedAsItsItems(t *testing.T) {
	clock := &fakeClock{}
	clock.Set(t0)
	reg := prometheus.NewRegistry()
	e := openWith(t, Config{DataDir: t.TempDir(), Clock: clock.Now, ManualTick: true, Logger: quiet, InboxMax: 16, Registerer: reg})
	d := testDef(100)
	if err := e.Define(ctxT(t), d); err != nil {
		t.Fatal(err)
	}
	h := e.SKU("c1", "s1")
	before := h.WALStats()
	items := make([]ReserveItem, 16)
	for i := range items {
		items[i] = ReserveItem{RequestID: fmt.Sprintf("r%d", i), UserID: fmt.Sprintf("u%d", i)}
	}
	got, err := e.ReserveBatch(ctxT(t), "c1", "s1", items)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range got {
		if r.Err != nil || r.Result.Outcome != sku.OutcomeAccepted {
			t.Fatalf("item %d: %+v", i, r)
		}
	}
	if recs := h.WALStats().Records - before.Records; recs != 16 {
		t.Fatalf("the batch appended %d records, want 16", recs)
	}
	if calls := decidedCalls(t, reg); calls["reserve_batch"] != 1 || calls["reserve"] != 0 {
		t.Fatalf("calls decided by kind %v: want the batch decided as one call", calls)
	}
	if p := h.processed.Load(); p < 16 {
		t.Fatalf("processed %d, want the 16 items counted", p)
	}
	over, err := e.ReserveBatch(ctxT(t), "c1", "s1", append(items, ReserveItem{RequestID: "r99", UserID: "u99"}))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range over {
		if !errors.Is(r.Err, ErrBusy) {
			t.Fatalf("item %d of a batch beyond InboxMax: %+v, want ErrBusy", i, r)
		}
	}
	if q := h.Stats().Queued; q != 0 {
		t.Fatalf("queued %d after a refused batch", q)
	}
}

// The whole batch is refused, with no item decided, when it names no SKU
// or holds no item or more than MaxBatchItems; a bad item fails alone.
func TestReserveBatchRefusals(t *testing.T) {
	e := openTest(t, t.TempDir(), &fakeClock{}, ptrDef(testDef(5)))
	if _, err := e.ReserveBatch(ctxT(t), "c1", "nope", []ReserveItem{{RequestID: "r1", UserID: "u1"}}); !errors.Is(err, ErrUnknownSKU) {
		t.Fatalf("unknown SKU: %v", err)
	}
	for _, n := range []int{0, MaxBatchItems + 1} {
		if _, err := e.ReserveBatch(ctxT(t), "c1", "s1", make([]ReserveItem, n)); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("%d items: %v", n, err)
		}
	}
	got, err := e.ReserveBatch(ctxT(t), "c1", "s1", []ReserveItem{{RequestID: "bad id!", UserID: "u1"}, {RequestID: "r2", UserID: "u2"}})
	if err != nil || !errors.Is(got[0].Err, ErrInvalidArgument) || got[1].Err != nil || got[1].Result.Outcome != sku.OutcomeAccepted {
		t.Fatalf("a bad item: %+v %v", got, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	got, err = e.ReserveBatch(ctx, "c1", "s1", []ReserveItem{{RequestID: "r3", UserID: "u3"}})
	if err != nil || (got[0].Err != nil && !errors.Is(got[0].Err, context.DeadlineExceeded)) {
		t.Fatalf("ctx done: %+v %v", got, err)
	}
}

func ptrDef(d sku.Definition) *sku.Definition { return &d }

// decidedCalls counts the calls the actors decided, by kind (the
// processing histogram's samples).
func decidedCalls(t *testing.T, reg *prometheus.Registry) map[string]uint64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, f := range families {
		if f.GetName() != "seckill_actor_processing_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "command" {
					out[l.GetValue()] += m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return out
}

// A batch item carries its entry pass's holder as ReserveWith's call does:
// the holder is recorded and counted against max_unpaid_per_subject, so a
// second item on the same subject key gets SUBJECT_LIMIT, the high-risk
// payment window applies, and a malformed holder fails its item alone.
func TestReserveBatchHolders(t *testing.T) {
	d := testDef(5)
	d.MaxUnpaidPerSubject, d.PaymentWindowHighRiskMs = 1, 10_000
	e := openTest(t, t.TempDir(), &fakeClock{}, &d)
	device := sku.Holder{Tier: 1, Risk: 1, Subjects: 1, Keys: [sku.SubjectKindCount]sku.SubjectKey{{1}}}
	got, err := e.ReserveBatch(ctxT(t), "c1", "s1", []ReserveItem{
		{RequestID: "r1", UserID: "u1", Holder: device},
		{RequestID: "r2", UserID: "u2", Holder: device},
		{RequestID: "r3", UserID: "u3", Holder: sku.Holder{Subjects: 1 << sku.SubjectKindCount}},
		{RequestID: "r4", UserID: "u4"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Err != nil || got[0].Result.Outcome != sku.OutcomeAccepted || got[0].Result.Reservation.ExpireAt != t0+10_000 {
		t.Fatalf("first holder of the key: %+v", got[0])
	}
	if got[1].Err != nil || got[1].Result.Outcome != sku.OutcomeSubjectLimit {
		t.Fatalf("second holder of the key: %+v, want SUBJECT_LIMIT", got[1])
	}
	if !errors.Is(got[2].Err, ErrInvalidArgument) {
		t.Fatalf("malformed holder: %+v, want ErrInvalidArgument", got[2])
	}
	if got[3].Err != nil || got[3].Result.Outcome != sku.OutcomeAccepted || got[3].Result.Reservation.ExpireAt != t0+60_000 {
		t.Fatalf("no holder: %+v", got[3])
	}
}
