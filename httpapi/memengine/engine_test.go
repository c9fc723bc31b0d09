package memengine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/httpapi/memengine"
)

// fixedKey draws the same reservation id key on both engines.
func fixedKey() io.Reader { return bytes.NewReader(bytes.Repeat([]byte{7}, 1024)) }

// TestTwinAnswersAsTheRealEngine runs one script of commands on the real
// engine and on the twin, at the same clock, and compares every answer,
// every error class, the published stats and the state hash: the twin is
// only worth its tests while it answers as the engine does.
func TestTwinAnswersAsTheRealEngine(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	clock := func() time.Time { return now }
	real, err := actors.Open(actors.Config{DataDir: t.TempDir(), Clock: clock, Rand: fixedKey(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	defer real.Close()
	twin := memengine.New(memengine.Config{Clock: clock, Rand: fixedKey()})

	ctx := context.Background()
	def := sku.Definition{CampaignID: "c", SKUID: "s", StartAt: 1_000_000, EndAt: 2_000_000,
		PaymentWindowMs: 60_000, SaleLimit: 2, ReleaseOnClose: false}
	type answer struct {
		res  sku.Result
		view sku.View
		err  string
	}
	errClass := func(err error) string {
		for _, e := range []error{actors.ErrUnknownSKU, actors.ErrNotFound, actors.ErrInvalidArgument,
			sku.ErrBadReservationID, sku.ErrInvalidDefinition, actors.ErrUnavailable} {
			if errors.Is(err, e) {
				return e.Error()
			}
		}
		if err != nil {
			return "other: " + err.Error()
		}
		return ""
	}
	script := func(e httpapi.Engine) []answer {
		var out []answer
		add := func(res sku.Result, err error) { out = append(out, answer{res: res, err: errClass(err)}) }
		out = append(out, answer{err: errClass(e.Define(ctx, def))})
		add(e.Reserve(ctx, "c", "s", "r1", "u1"))
		add(e.Reserve(ctx, "c", "s", "r1", "u1"))    // duplicate
		add(e.Reserve(ctx, "c", "s", "r1", "u9"))    // reused
		add(e.Reserve(ctx, "c", "s", "r2", "u1"))    // already purchased
		add(e.Reserve(ctx, "c", "s", "r3", "u2"))    // the last token
		add(e.Reserve(ctx, "c", "s", "r4", "u3"))    // sold out, recorded
		add(e.Reserve(ctx, "c", "s", "r/5", "u3"))   // malformed id
		add(e.Reserve(ctx, "c", "nope", "r6", "u3")) // unknown SKU
		first := out[1].res.Reservation.ReservationID
		second := out[5].res.Reservation.ReservationID
		add(e.Pay(ctx, first, "p1", 100))
		add(e.Pay(ctx, first, "p2", 100)) // conflict: recorded for refund
		add(e.Cancel(ctx, second))
		add(e.Release(ctx, second))
		add(e.Release(ctx, second))
		add(e.Pay(ctx, "bad-id", "p3", 1))
		add(e.Pay(ctx, first[:len(first)-1]+"x", "p3", 1)) // wrong tag
		v, err := e.Get(ctx, first)
		out = append(out, answer{view: v, err: errClass(err)})
		add(e.Lookup(ctx, "c", "s", "r4"))
		add(e.Lookup(ctx, "c", "s", "never"))
		out = append(out, answer{err: errClass(e.Pause(ctx, "c", "s"))})
		add(e.Reserve(ctx, "c", "s", "r7", "u7"))
		out = append(out, answer{err: errClass(e.Resume(ctx, "c", "s"))})
		add(e.Reserve(ctx, "c", "s", "r7", "u7"))
		redef := def
		redef.SaleLimit = 1
		out = append(out, answer{err: errClass(e.Define(ctx, redef))})
		refunds, err := e.Refunds(ctx, "c", "s")
		out = append(out, answer{err: errClass(err) + fmt.Sprint(refunds)})
		a, err := e.Audit(ctx, "c", "s")
		out = append(out, answer{err: errClass(err) + fmt.Sprintf("%+v", a)})
		return out
	}
	want, got := script(real), script(twin)
	for i := range want {
		if !reflect.DeepEqual(want[i], got[i]) {
			t.Errorf("step %d:\n real %+v\n twin %+v", i, want[i], got[i])
		}
	}
	rs, _ := real.SKUStats("c", "s")
	ts, _ := twin.SKUStats("c", "s")
	rs.Queued, rs.OldestWait, rs.RatePerSecond = 0, 0, 0  // load is the real actor's own
	rs.CommitWait, rs.CommitLatency, rs.Commits = 0, 0, 0 // and its log's
	if rs != ts {
		t.Errorf("stats:\n real %+v\n twin %+v", rs, ts)
	}
	realHash, err := real.StateHash(ctx, "c", "s")
	twinHash, ok := twin.Hash("c", "s")
	if err != nil || !ok || realHash != twinHash {
		t.Errorf("state hash differs (%v, %v)", err, ok)
	}
	for _, id := range []string{"r1", "r4", "never"} {
		if twin.MayKnowRequest("c", "s", id) != (id != "never") {
			t.Errorf("twin MayKnowRequest(%s)", id)
		}
		if id != "never" && !real.MayKnowRequest("c", "s", id) {
			t.Errorf("real MayKnowRequest(%s) is false for a decided request", id)
		}
	}
}

// TestTwinHooks: Before refuses without applying, Decided answers its
// error with the command applied, and MakeRoom bounds new SKUs.
func TestTwinHooks(t *testing.T) {
	ctx := context.Background()
	twin := memengine.New(memengine.Config{MaxSKUs: 1})
	def := sku.Definition{CampaignID: "c", SKUID: "s", StartAt: 0, EndAt: 1 << 50, PaymentWindowMs: 1000, SaleLimit: 5}
	if err := twin.Define(ctx, def); err != nil {
		t.Fatal(err)
	}
	other := def
	other.SKUID = "t"
	if err := twin.Define(ctx, other); !errors.Is(err, actors.ErrTooManySKUs) {
		t.Fatalf("a second SKU over MaxSKUs: %v", err)
	}
	if _, err := twin.MakeRoom([]sku.Definition{other}); !errors.Is(err, actors.ErrTooManySKUs) {
		t.Fatalf("MakeRoom over MaxSKUs: %v", err)
	}
	twin.SetHooks(memengine.Hooks{
		Before: func(_ context.Context, c memengine.Call) error {
			if c.Kind == memengine.KindReserve && c.RequestID == "refused" {
				return actors.ErrUnavailable
			}
			return nil
		},
		Decided: func(_ context.Context, c memengine.Call, _ sku.Result) error {
			if c.Kind == memengine.KindReserve && c.RequestID == "unknown" {
				return actors.ErrResultUnknown
			}
			return nil
		},
	})
	if _, err := twin.Reserve(ctx, "c", "s", "refused", "u1"); !errors.Is(err, actors.ErrUnavailable) {
		t.Fatalf("Before: %v", err)
	}
	if _, err := twin.Lookup(ctx, "c", "s", "refused"); !errors.Is(err, actors.ErrNotFound) {
		t.Fatalf("a refused reserve was applied: %v", err)
	}
	if _, err := twin.Reserve(ctx, "c", "s", "unknown", "u2"); !errors.Is(err, actors.ErrResultUnknown) {
		t.Fatalf("Decided: %v", err)
	}
	if res, err := twin.Lookup(ctx, "c", "s", "unknown"); err != nil || res.Outcome != sku.OutcomeAccepted {
		t.Fatalf("the reserve answered RESULT_UNKNOWN was not applied: %v %v", res.Outcome, err)
	}
	twin.SetUnavailable("c", "s", true)
	if st, _ := twin.SKUStats("c", "s"); !st.Unavailable {
		t.Fatal("stats do not say unavailable")
	}
	if _, err := twin.Reserve(ctx, "c", "s", "r3", "u3"); !errors.Is(err, actors.ErrUnavailable) {
		t.Fatalf("reserve on an unavailable SKU: %v", err)
	}
}
