package actors

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/purchase"
	"github.com/seckill/seckill/actors/sku"
)

// TestLotteryInACampaignScopeCampaign: in a campaign whose purchase_limit
// is "campaign", a lottery entry holds its user like a purchase while it
// may still win. Entered users get ALREADY_ENTERED elsewhere, buyers get
// ALREADY_PURCHASED at the lottery; after the draw the losers are free, the
// winners hold their reservations, the waitlisted stay held (also across a
// restart) until promoted or until the lottery ends at end_at.
func TestLotteryInACampaignScopeCampaign(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{}
	clock.Set(lotOpen - 1000)
	e := openTest(t, dir, clock, nil)
	lot := lotteryTestDef(2, 3)
	lot.CampaignID, lot.SKUID, lot.PurchaseLimit = "c5", "lot", sku.PurchaseLimitCampaign
	lot.EndAt = lotOpen + 200_000
	plain := testDef(100)
	plain.CampaignID, plain.SKUID, plain.PurchaseLimit = "c5", "a", sku.PurchaseLimitCampaign
	plain.StartAt, plain.EndAt = lotOpen-1000, lotOpen+86_400_000
	defineAll(t, e, []sku.Definition{lot, plain})
	clock.Set(lotOpen)

	for i := 1; i <= 7; i++ {
		res, err := e.Enter(ctxT(t), "c5", "lot", fmt.Sprintf("e%d", i), fmt.Sprintf("u%d", i), sku.Holder{})
		if err != nil || res.Outcome != sku.OutcomeEntered {
			t.Fatalf("entry %d: %+v %v", i, res, err)
		}
	}
	reserve := func(e *Engine, request, user string) sku.Result {
		t.Helper()
		res, err := e.Reserve(ctxT(t), "c5", "a", request, user)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := reserve(e, "a-u1", "u1"); res.Outcome != sku.OutcomeAlreadyEntered ||
		res.Entered != (sku.EntryRef{CampaignID: "c5", SKUID: "lot", RequestID: "e1"}) {
		t.Fatalf("reserve while entered: %+v", res)
	}
	bought := reserve(e, "a-u9", "u9")
	if bought.Outcome != sku.OutcomeAccepted {
		t.Fatalf("u9: %+v", bought)
	}
	if res, err := e.Enter(ctxT(t), "c5", "lot", "e9", "u9", sku.Holder{}); err != nil || res.Outcome != sku.OutcomeAlreadyPurchased ||
		res.Purchase.ReservationID != bought.Reservation.ReservationID {
		t.Fatalf("entry of a buyer: %+v %v", res, err)
	}
	// A repeat of an entry made before is that entry, whatever holds now.
	if res, _ := e.Enter(ctxT(t), "c5", "lot", "e1", "u1", sku.Holder{}); res.Outcome != sku.OutcomeEntered || !res.Duplicate {
		t.Fatalf("repeat entry: %+v", res)
	}

	clock.Set(lotClose)
	e.SKU("c5", "lot").expireNow(t)
	// Closed entries answer so whatever the user holds elsewhere.
	if res, err := e.Enter(ctxT(t), "c5", "lot", "e10", "u9", sku.Holder{}); err != nil || res.Outcome != sku.OutcomeEntriesClosed {
		t.Fatalf("a buyer's entry after the close: %+v %v", res, err)
	}
	clock.Set(lotOpen + 90_000)
	randomness := sha256.Sum256([]byte("round 31"))
	if o, err := e.Draw(ctxT(t), "c5", "lot", lotRound, randomness[:], nil); err != nil || o != sku.OutcomeDrawStarted {
		t.Fatalf("draw: %s %v", o, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		f, err := e.Frozen(ctxT(t), "c5", "lot")
		if err != nil {
			t.Fatal(err)
		}
		if info, _ := f.LotteryInfo(0); info.Done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the draw is not recorded")
		}
		e.SKU("c5", "lot").expireNow(t)
		time.Sleep(5 * time.Millisecond)
	}
	status := map[sku.EntryStatus][]string{}
	for i := 1; i <= 7; i++ {
		v, err := e.Entry(ctxT(t), "c5", "lot", fmt.Sprintf("e%d", i))
		if err != nil {
			t.Fatal(err)
		}
		status[v.Status] = append(status[v.Status], v.UserID)
	}
	if len(status[sku.EntryWon]) != 2 || len(status[sku.EntryWaitlisted]) != 3 || len(status[sku.EntryLost]) != 2 {
		t.Fatalf("statuses %v", status)
	}
	for _, u := range status[sku.EntryWon] {
		if res := reserve(e, "a-won-"+u, u); res.Outcome != sku.OutcomeAlreadyPurchased {
			t.Fatalf("winner %s: %+v", u, res)
		}
	}
	for _, u := range status[sku.EntryWaitlisted] {
		if res := reserve(e, "a-wait-"+u, u); res.Outcome != sku.OutcomeAlreadyEntered {
			t.Fatalf("waitlisted %s: %+v", u, res)
		}
	}
	for _, u := range status[sku.EntryLost] {
		if res := reserve(e, "a-lost-"+u, u); res.Outcome != sku.OutcomeAccepted {
			t.Fatalf("loser %s: %+v", u, res)
		}
	}
	mustCampaignAudit(t, e)

	// A restart rebuilds the holds from the SKUs' states.
	e.Close()
	e = openTest(t, dir, clock, nil)
	for _, u := range status[sku.EntryWaitlisted] {
		if res := reserve(e, "a-wait2-"+u, u); res.Outcome != sku.OutcomeAlreadyEntered {
			t.Fatalf("waitlisted %s after a restart: %+v", u, res)
		}
	}
	// The winners' reservations expire: the first two waitlisted are
	// promoted and hold them; at end_at the third is let go.
	clock.Set(lotOpen + 160_000)
	e.SKU("c5", "lot").expireNow(t)
	var promoted, left []string
	for _, u := range status[sku.EntryWaitlisted] {
		switch res := reserve(e, "a-promo-"+u, u); res.Outcome {
		case sku.OutcomeAlreadyPurchased:
			promoted = append(promoted, u)
		case sku.OutcomeAlreadyEntered:
			left = append(left, u)
		default:
			t.Fatalf("waitlisted %s after the expiry: %+v", u, res)
		}
	}
	for _, u := range status[sku.EntryWon] {
		if res := reserve(e, "a-expired-"+u, u); res.Outcome != sku.OutcomeAccepted {
			t.Fatalf("winner %s whose reservation expired: %+v", u, res)
		}
	}
	if len(promoted) != 2 || len(left) != 1 {
		t.Fatalf("promoted %v, still waiting %v", promoted, left)
	}
	clock.Set(lot.EndAt)
	e.SKU("c5", "lot").expireNow(t)
	if res := reserve(e, "a-end-"+left[0], left[0]); res.Outcome != sku.OutcomeAccepted {
		t.Fatalf("waitlisted %s after end_at: %+v", left[0], res)
	}
	if v, _ := e.Entry(ctxT(t), "c5", "lot", "e"+left[0][1:]); v.Status != sku.EntryLost {
		t.Fatalf("the entry left waiting at end_at: %+v", v)
	}
	mustCampaignAudit(t, e)
}

// TestCampaignAuditSeesAnEntryAndAPurchase: a lottery SKU and a plain SKU
// of one campaign-scope campaign made by two engines (as a restore of one
// SKU alone can) hold one user twice, by an entry and a purchase; the
// engine that opens both reports it.
func TestCampaignAuditSeesAnEntryAndAPurchase(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{}
	clock.Set(lotOpen)
	lot := lotteryTestDef(2, 0)
	lot.CampaignID, lot.SKUID, lot.PurchaseLimit = "c5", "lot", sku.PurchaseLimitCampaign
	plain := testDef(10)
	plain.CampaignID, plain.SKUID, plain.PurchaseLimit = "c5", "a", sku.PurchaseLimitCampaign
	plain.StartAt, plain.EndAt = lotOpen-1000, lotOpen+86_400_000
	for _, d := range []sku.Definition{lot, plain} {
		own := t.TempDir()
		e := openTest(t, own, clock, &d)
		if d.Lottery != nil {
			if res, err := e.Enter(ctxT(t), "c5", "lot", "e1", "u1", sku.Holder{}); err != nil || res.Outcome != sku.OutcomeEntered {
				t.Fatalf("enter: %+v %v", res, err)
			}
		} else if res, err := e.Reserve(ctxT(t), "c5", "a", "r1", "u1"); err != nil || res.Outcome != sku.OutcomeAccepted {
			t.Fatalf("reserve: %+v %v", res, err)
		}
		e.Close()
		if err := os.MkdirAll(filepath.Join(dir, "c5"), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(own, "c5", d.SKUID), filepath.Join(dir, "c5", d.SKUID)); err != nil {
			t.Fatal(err)
		}
	}
	e := openTest(t, dir, clock, nil)
	a, err := e.CampaignAudit(ctxT(t), "c5")
	if err != nil {
		t.Fatal(err)
	}
	if a.OK() || len(a.Violations) != 1 || !strings.Contains(a.Violations[0], "user u1 holds 2") ||
		!strings.Contains(a.Violations[0], purchase.EntryHold("lot", "e1")) || a.LiveUsers != 1 {
		t.Fatalf("campaign audit: %+v", a)
	}
}

// TestEntrySubjectLimitHoldsNoClaim: in a campaign whose purchase_limit is
// "campaign", an entry refused SUBJECT_LIMIT is not recorded, so its user
// holds nothing: the user may buy on another SKU of the campaign, and a
// user who entered with the key still holds its claim.
func TestEntrySubjectLimitHoldsNoClaim(t *testing.T) {
	clock := &fakeClock{}
	clock.Set(lotOpen - 1000)
	e := openTest(t, t.TempDir(), clock, nil)
	lot := lotteryTestDef(2, 3)
	lot.CampaignID, lot.SKUID, lot.PurchaseLimit = "c5", "lot", sku.PurchaseLimitCampaign
	lot.MaxUnpaidPerSubject = 1
	plain := testDef(100)
	plain.CampaignID, plain.SKUID, plain.PurchaseLimit = "c5", "a", sku.PurchaseLimitCampaign
	plain.StartAt, plain.EndAt = lotOpen-1000, lotOpen+86_400_000
	defineAll(t, e, []sku.Definition{lot, plain})
	clock.Set(lotOpen)

	device := sku.Holder{Subjects: 1, Keys: [sku.SubjectKindCount]sku.SubjectKey{{7}}}
	if res, err := e.Enter(ctxT(t), "c5", "lot", "ep.u1", "u1", device); err != nil || res.Outcome != sku.OutcomeEntered {
		t.Fatalf("u1: %+v %v", res, err)
	}
	if res, err := e.Enter(ctxT(t), "c5", "lot", "ep.u2", "u2", device); err != nil || res.Outcome != sku.OutcomeSubjectLimit {
		t.Fatalf("u2 on u1's device: %+v %v, want SUBJECT_LIMIT", res, err)
	}
	if res, err := e.Reserve(ctxT(t), "c5", "a", "a-u2", "u2"); err != nil || res.Outcome != sku.OutcomeAccepted {
		t.Fatalf("u2 after its refused entry: %+v %v, want ACCEPTED", res, err)
	}
	if res, err := e.Reserve(ctxT(t), "c5", "a", "a-u1", "u1"); err != nil || res.Outcome != sku.OutcomeAlreadyEntered {
		t.Fatalf("u1, entered: %+v %v, want ALREADY_ENTERED", res, err)
	}
	if a, err := e.CampaignAudit(ctxT(t), "c5"); err != nil || !a.OK() {
		t.Fatalf("campaign audit: %+v %v", a, err)
	}
}
