package cells

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/client"
)

// TestGuardEveryReservePath: a user of another cell is refused with
// ErrWrongCell by Reserve, ReserveWith (entry passes) and each item of
// ReserveBatch, and never reaches the engine (a real one, the SKU granted
// 10 tokens); this cell's users do; a SKU that is not celled is not
// checked.
func TestGuardEveryReservePath(t *testing.T) {
	m, err := EvenMap(1, []string{"c1", "c2"})
	if err != nil {
		t.Fatal(err)
	}
	pub := Published{Definition: sku.Definition{CampaignID: "demo", SKUID: "sku-1"}, Map: m}
	var mine, other string
	for u := 0; mine == "" || other == ""; u++ {
		user := fmt.Sprintf("u%d", u)
		if pub.CellOf(user) == "c1" {
			mine = user
		} else {
			other = user
		}
	}
	e := openCell(t, t.TempDir(), "c1") // demo/sku-1, cell c1
	defer e.Close()
	ctx := context.Background()
	if err := e.Grant(ctx, "demo", "sku-1", sku.Allocation{Seq: 1, Ranges: []sku.TokenRange{{First: 1, Last: 10}}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := e.Define(ctx, sku.Definition{CampaignID: "demo", SKUID: "cold", StartAt: now.Add(-time.Second).UnixMilli(),
		EndAt: now.Add(time.Hour).UnixMilli(), PaymentWindowMs: 60_000, SaleLimit: 10, ReleaseOnClose: true}); err != nil {
		t.Fatal(err)
	}
	g := NewGuard(e, "c1", []Published{pub}, nil)
	if _, err := g.Reserve(ctx, "demo", "sku-1", "r1", other); !errors.Is(err, actors.ErrWrongCell) {
		t.Fatalf("reserve of another cell's user: %v", err)
	} else if cell := client.WrongCell(&client.Error{Code: "WRONG_CELL", Detail: err.Error()}); cell != "c2" {
		// The 421's detail is this error's text: the client package
		// reads the user's cell from it to follow the 421.
		t.Fatalf("the client reads cell %q from %q, want c2", cell, err)
	}
	if _, err := g.ReserveWith(ctx, "demo", "sku-1", "r2", other, sku.Holder{Risk: 1}); !errors.Is(err, actors.ErrWrongCell) {
		t.Fatalf("reserve with a pass of another cell's user: %v", err)
	}
	res, err := g.ReserveBatch(ctx, "demo", "sku-1", []actors.ReserveItem{{RequestID: "r3", UserID: other}, {RequestID: "r4", UserID: mine}, {RequestID: "r5", UserID: other}})
	if err != nil || len(res) != 3 || !errors.Is(res[0].Err, actors.ErrWrongCell) || res[1].Err != nil ||
		res[1].Result.Outcome != sku.OutcomeAccepted || !errors.Is(res[2].Err, actors.ErrWrongCell) {
		t.Fatalf("batch: %+v, %v", res, err)
	}
	if res, err := g.Reserve(ctx, "demo", "sku-1", "r6", mine); err != nil || res.Outcome != sku.OutcomeAlreadyPurchased {
		t.Fatalf("this cell's user again: %+v %v", res.Outcome, err)
	}
	if res, err := g.ReserveWith(ctx, "demo", "cold", "r7", other, sku.Holder{}); err != nil || res.Outcome != sku.OutcomeAccepted {
		t.Fatalf("not celled, not checked: %+v %v", res.Outcome, err) // not celled: not checked
	}
	for skuID, want := range map[string]uint32{"sku-1": 1, "cold": 1} {
		if a, err := e.Audit(ctx, "demo", skuID); err != nil || a.Counts.Reservations != want {
			t.Fatalf("%s: %d reservations reached the engine, want %d (%v)", skuID, a.Counts.Reservations, want, err)
		}
	}
}
