package actors

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/seckill/seckill/actors/sku"
)

// scopedDefs returns n SKU definitions of campaign "c5" with campaign scope.
func scopedDefs(n int, limit uint32) []sku.Definition {
	defs := make([]sku.Definition, n)
	for i := range defs {
		d := testDef(limit)
		d.CampaignID, d.SKUID, d.PurchaseLimit = "c5", fmt.Sprintf("s%d", i+1), sku.PurchaseLimitCampaign
		defs[i] = d
	}
	return defs
}

func defineAll(t *testing.T, e *Engine, defs []sku.Definition) {
	t.Helper()
	for _, d := range defs {
		if err := e.Define(ctxT(t), d); err != nil {
			t.Fatal(err)
		}
	}
}

// mustCampaignAudit audits campaign c5 and fails on a violation; it
// returns the number of live purchases over its SKUs.
func mustCampaignAudit(t *testing.T, e *Engine) (live int) {
	t.Helper()
	a, err := e.CampaignAudit(ctxT(t), "c5")
	if err != nil {
		t.Fatal(err)
	}
	if !a.OK() {
		t.Fatalf("campaign audit: %v %+v", a.Violations, a.SKUs)
	}
	for _, s := range a.SKUs {
		live += int(s.Audit.Counts.PendingPayment + s.Audit.Counts.Paid)
	}
	if a.PurchaseLimit == sku.PurchaseLimitCampaign && live != a.LiveUsers {
		t.Fatalf("%d live purchases for %d users", live, a.LiveUsers)
	}
	return live
}

func TestOneUserClickingTwoSKUsGetsOnePurchase(t *testing.T) {
	e := openTest(t, t.TempDir(), &fakeClock{}, nil)
	defineAll(t, e, scopedDefs(2, 100))
	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[string]int{}
	var accepted []sku.Result
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.Reserve(ctxT(t), "c5", fmt.Sprintf("s%d", g%2+1), fmt.Sprintf("r%d", g), "alice")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, ErrBusy):
				outcomes["BUSY"]++
			case err != nil:
				t.Error(err)
			default:
				outcomes[res.Outcome.String()]++
				if res.Outcome == sku.OutcomeAccepted {
					accepted = append(accepted, res)
				}
			}
		}()
	}
	wg.Wait()
	if len(accepted) != 1 || outcomes["ACCEPTED"] != 1 {
		t.Fatalf("outcomes %v", outcomes)
	}
	if outcomes["ALREADY_PURCHASED"] == 0 {
		t.Fatalf("no ALREADY_PURCHASED among %v", outcomes)
	}
	if mustCampaignAudit(t, e) != 1 {
		t.Fatal("not one live purchase")
	}
	// The other SKU names the one held.
	won := accepted[0].Reservation.ReservationID
	_, wonSKU, _, _, _ := sku.ParseReservationID(won)
	other := "s1"
	if wonSKU == "s1" {
		other = "s2"
	}
	res, err := e.Reserve(ctxT(t), "c5", other, "later", "alice")
	if err != nil || res.Outcome != sku.OutcomeAlreadyPurchased || res.Reservation.ReservationID != won {
		t.Fatalf("other SKU: %+v %v, want ALREADY_PURCHASED %s", res, err, won)
	}
	// Not recorded: the other SKU knows nothing of "later".
	if _, err := e.Lookup(ctxT(t), "c5", other, "later"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("cross-SKU refusal recorded: %v", err)
	}
	// The same request again: its own answer (idempotent).
	rep, err := e.Reserve(ctxT(t), "c5", wonSKU, accepted[0].Reservation.RequestID, "alice")
	if err != nil || rep.Outcome != sku.OutcomeAccepted || !rep.Duplicate || rep.Reservation.ReservationID != won {
		t.Fatalf("repeat: %+v %v", rep, err)
	}
}

func TestThousandUsersClickingFiveSKUs(t *testing.T) {
	e := openTest(t, t.TempDir(), &fakeClock{}, nil)
	defineAll(t, e, scopedDefs(5, 2000))
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := map[string]int{}
	sem := make(chan struct{}, 256)
	for u := 0; u < 1000; u++ {
		for s := 1; s <= 5; s++ {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				user := fmt.Sprintf("u%d", u)
				res, err := e.Reserve(ctxT(t), "c5", fmt.Sprintf("s%d", s), fmt.Sprintf("r%d-%d", u, s), user)
				if err != nil {
					if !errors.Is(err, ErrBusy) {
						t.Error(err)
					}
					return
				}
				if res.Outcome == sku.OutcomeAccepted {
					mu.Lock()
					accepted[user]++
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	for u, n := range accepted {
		if n != 1 {
			t.Fatalf("user %s: %d purchases", u, n)
		}
	}
	if len(accepted) != 1000 {
		t.Fatalf("%d of 1000 users bought", len(accepted))
	}
	if live := mustCampaignAudit(t, e); live != 1000 {
		t.Fatalf("%d live purchases", live)
	}
}

func TestCancelOrExpiryFreesTheCampaignForAnotherSKU(t *testing.T) {
	clock := &fakeClock{}
	dir := t.TempDir()
	e := openTest(t, dir, clock, nil)
	defineAll(t, e, scopedDefs(3, 10))
	first, err := e.Reserve(ctxT(t), "c5", "s1", "r1", "bob")
	if err != nil || first.Outcome != sku.OutcomeAccepted {
		t.Fatalf("%+v %v", first, err)
	}
	if res, _ := e.Reserve(ctxT(t), "c5", "s2", "r2", "bob"); res.Outcome != sku.OutcomeAlreadyPurchased {
		t.Fatalf("s2 while s1 live: %v", res.Outcome)
	}
	if res, err := e.Cancel(ctxT(t), first.Reservation.ReservationID); err != nil || res.Outcome != sku.OutcomeClosed {
		t.Fatalf("cancel: %+v %v", res, err)
	}
	second, err := e.Reserve(ctxT(t), "c5", "s2", "r2", "bob")
	if err != nil || second.Outcome != sku.OutcomeAccepted {
		t.Fatalf("after cancel: %+v %v", second, err)
	}
	// Expiry: the payment window passes, the tick closes it durably.
	clock.Set(t0 + 61_000)
	e.SKU("c5", "s2").expireNow(t)
	third, err := e.Reserve(ctxT(t), "c5", "s3", "r3", "bob")
	if err != nil || third.Outcome != sku.OutcomeAccepted {
		t.Fatalf("after expiry: %+v %v", third, err)
	}
	// A paid purchase holds too, and survives a restart (the registry is
	// rebuilt from the SKUs' states).
	if res, err := e.Pay(ctxT(t), third.Reservation.ReservationID, "pay-1", 100); err != nil || res.Outcome != sku.OutcomePaid {
		t.Fatalf("pay: %+v %v", res, err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openTest(t, dir, clock, nil)
	res, err := e.Reserve(ctxT(t), "c5", "s1", "r4", "bob")
	if err != nil || res.Outcome != sku.OutcomeAlreadyPurchased || res.Reservation.ReservationID != third.Reservation.ReservationID {
		t.Fatalf("after restart: %+v %v", res, err)
	}
	mustCampaignAudit(t, e)
}

func TestPurchaseLimitIsOnePerCampaign(t *testing.T) {
	e := openTest(t, t.TempDir(), &fakeClock{}, nil)
	defs := scopedDefs(2, 10)
	defineAll(t, e, defs[:1])
	d := defs[1]
	d.PurchaseLimit = sku.PurchaseLimitSKU
	if err := e.Define(ctxT(t), d); !errors.Is(err, sku.ErrInvalidDefinition) {
		t.Fatalf("a SKU-scope SKU in a campaign-scope campaign: %v", err)
	}
	d = defs[0]
	d.PurchaseLimit = sku.PurchaseLimitSKU
	if err := e.Define(ctxT(t), d); !errors.Is(err, sku.ErrInvalidDefinition) {
		t.Fatalf("scope changed: %v", err)
	}
	if err := e.Define(ctxT(t), defs[1]); err != nil {
		t.Fatal(err)
	}
}

func TestBatchItemsTakeClaims(t *testing.T) {
	e := openTest(t, t.TempDir(), &fakeClock{}, nil)
	defineAll(t, e, scopedDefs(2, 10))
	if res, err := e.Reserve(ctxT(t), "c5", "s1", "a1", "ann"); err != nil || res.Outcome != sku.OutcomeAccepted {
		t.Fatalf("%+v %v", res, err)
	}
	out, err := e.ReserveBatch(ctxT(t), "c5", "s2", []ReserveItem{
		{RequestID: "b1", UserID: "ann"}, {RequestID: "b2", UserID: "ben"}, {RequestID: "b3", UserID: "ben"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []sku.Outcome{sku.OutcomeAlreadyPurchased, sku.OutcomeAccepted, sku.OutcomeAlreadyPurchased}
	for i, r := range out {
		if r.Err != nil || r.Result.Outcome != want[i] {
			t.Fatalf("item %d: %+v, want %v", i, r, want[i])
		}
	}
	if res, _ := e.Reserve(ctxT(t), "c5", "s1", "a2", "ben"); res.Outcome != sku.OutcomeAlreadyPurchased {
		t.Fatalf("ben on s1: %v", res.Outcome)
	}
	mustCampaignAudit(t, e)
}
