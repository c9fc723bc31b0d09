package cells

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/httpapi"
)

// recordingEngine records the users that reach it by each reserve path;
// every other method is the nil embedded Engine's (never called here).
type recordingEngine struct {
	httpapi.Engine
	reached []string
}

func (e *recordingEngine) Reserve(_ context.Context, _, _, _, userID string) (sku.Result, error) {
	e.reached = append(e.reached, "reserve:"+userID)
	return sku.Result{Outcome: sku.OutcomeAccepted}, nil
}

func (e *recordingEngine) ReserveWith(_ context.Context, _, _, _, userID string, _ sku.Holder) (sku.Result, error) {
	e.reached = append(e.reached, "with:"+userID)
	return sku.Result{Outcome: sku.OutcomeAccepted}, nil
}

func (e *recordingEngine) ReserveBatch(_ context.Context, _, _ string, items []actors.ReserveItem) ([]actors.ItemResult, error) {
	out := make([]actors.ItemResult, len(items))
	for i, it := range items {
		e.reached = append(e.reached, "batch:"+it.UserID)
		out[i].Result.Outcome = sku.OutcomeAccepted
	}
	return out, nil
}

// TestGuardEveryReservePath: a user of another cell is refused with
// ErrWrongCell by Reserve, ReserveWith (entry passes) and each item of
// ReserveBatch, and never reaches the engine; this cell's users do, a
// batch's in order; a SKU that is not celled is not checked.
func TestGuardEveryReservePath(t *testing.T) {
	m, err := EvenMap(1, []string{"c1", "c2"})
	if err != nil {
		t.Fatal(err)
	}
	var mine, other string
	for u := 0; mine == "" || other == ""; u++ {
		user := fmt.Sprintf("u%d", u)
		if m.CellOf("demo", "hot", user) == "c1" {
			mine = user
		} else {
			other = user
		}
	}
	e := &recordingEngine{}
	g := NewGuard(e, "c1", []Published{{Definition: sku.Definition{CampaignID: "demo", SKUID: "hot"}, Map: m}})
	ctx := context.Background()
	if _, err := g.Reserve(ctx, "demo", "hot", "r1", other); !errors.Is(err, actors.ErrWrongCell) {
		t.Fatalf("reserve of another cell's user: %v", err)
	}
	if _, err := g.ReserveWith(ctx, "demo", "hot", "r2", other, sku.Holder{Risk: 1}); !errors.Is(err, actors.ErrWrongCell) {
		t.Fatalf("reserve with a pass of another cell's user: %v", err)
	}
	res, err := g.ReserveBatch(ctx, "demo", "hot", []actors.ReserveItem{{RequestID: "r3", UserID: other}, {RequestID: "r4", UserID: mine}, {RequestID: "r5", UserID: other}})
	if err != nil || len(res) != 3 || !errors.Is(res[0].Err, actors.ErrWrongCell) || res[1].Err != nil ||
		res[1].Result.Outcome != sku.OutcomeAccepted || !errors.Is(res[2].Err, actors.ErrWrongCell) {
		t.Fatalf("batch: %+v, %v", res, err)
	}
	if _, err := g.Reserve(ctx, "demo", "hot", "r6", mine); err != nil {
		t.Fatal(err)
	}
	if _, err := g.ReserveWith(ctx, "demo", "cold", "r7", other, sku.Holder{}); err != nil {
		t.Fatal(err) // not celled: not checked
	}
	want := fmt.Sprint([]string{"batch:" + mine, "reserve:" + mine, "with:" + other})
	if got := fmt.Sprint(e.reached); got != want {
		t.Fatalf("reached the engine: %s, want %s", got, want)
	}
}
