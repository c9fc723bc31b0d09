package actors

import (
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/lottery"
)

const (
	lotOpen  = lottery.QuicknetGenesis * 1000
	lotClose = lotOpen + 60_000
	lotRound = 31 // published 90 s after lotOpen
)

func lotteryTestDef(limit, waitlist uint32) sku.Definition {
	return sku.Definition{CampaignID: "c1", SKUID: "s1", StartAt: lotOpen, EndAt: lotOpen + 86_400_000,
		PaymentWindowMs: 60_000, SaleLimit: limit, ReleaseOnClose: true,
		Lottery: &sku.LotteryRules{EntriesOpenAt: lotOpen, EntriesCloseAt: lotClose,
			Beacon: lottery.Beacon{Source: lottery.SourceDrandQuicknet, Round: lotRound}, Waitlist: waitlist}}
}

// waitDrawn ticks the SKU until its draw is recorded (the ranking runs on
// another goroutine) or a generous deadline passes.
func waitDrawn(t *testing.T, e *Engine) sku.LotteryInfo {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		f, err := e.Frozen(ctxT(t), "c1", "s1")
		if err != nil {
			t.Fatal(err)
		}
		info, _ := f.LotteryInfo(0)
		if info.Done {
			return info
		}
		if time.Now().After(deadline) {
			t.Fatalf("the draw is not recorded: %+v", info)
		}
		e.SKU("c1", "s1").expireNow(t)
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLotteryThroughTheEngine: entries, the close by the timer, a draw
// ranked off the actor, answers, and the same state after a restart.
func TestLotteryThroughTheEngine(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{}
	clock.Set(lotOpen - 1000)
	d := lotteryTestDef(20, 10)
	e := openTest(t, dir, clock, &d)
	clock.Set(lotOpen)
	for i := 1; i <= 300; i++ {
		res, err := e.Enter(ctxT(t), "c1", "s1", fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i), sku.Holder{})
		if err != nil || res.Outcome != sku.OutcomeEntered || res.Entry.EntrySeq != uint32(i) {
			t.Fatalf("entry %d: %+v %v", i, res, err)
		}
	}
	if res, err := e.Reserve(ctxT(t), "c1", "s1", "plain", "u1"); err != nil || res.Outcome != sku.OutcomeLotterySale {
		t.Fatalf("plain reserve: %v %v", res.Outcome, err)
	}
	clock.Set(lotClose)
	e.SKU("c1", "s1").expireNow(t) // the timer closes the entries
	if res, _ := e.Enter(ctxT(t), "c1", "s1", "late", "late", sku.Holder{}); res.Outcome != sku.OutcomeEntriesClosed {
		t.Fatalf("late entry: %s", res.Outcome)
	}
	randomness := sha256.Sum256([]byte("round 31"))
	if o, _ := e.Draw(ctxT(t), "c1", "s1", lotRound, randomness[:], nil); o != sku.OutcomeBeaconNotDue {
		t.Fatalf("early draw: %s", o)
	}
	clock.Set(lotOpen + 90_000)
	if o, err := e.Draw(ctxT(t), "c1", "s1", lotRound, randomness[:], nil); err != nil || o != sku.OutcomeDrawStarted {
		t.Fatalf("draw: %s %v", o, err)
	}
	info := waitDrawn(t, e)
	if info.Winners != 20 || info.Waitlisted != 10 || info.EntryCount != 300 {
		t.Fatalf("info %+v", info)
	}
	if o, _ := e.Draw(ctxT(t), "c1", "s1", lotRound, randomness[:], nil); o != sku.OutcomeAlreadyDrawn {
		t.Fatalf("second draw: %s", o)
	}
	won := 0
	for i := 1; i <= 300; i++ {
		v, err := e.Entry(ctxT(t), "c1", "s1", fmt.Sprintf("r%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if v.Status == sku.EntryWon {
			won++
		}
	}
	if won != 20 {
		t.Fatalf("%d entries won", won)
	}
	mustAudit(t, e)
	before, _ := e.StateHash(ctxT(t), "c1", "s1")
	e.Close()
	e2 := openTest(t, dir, clock, nil)
	after, _ := e2.StateHash(ctxT(t), "c1", "s1")
	if before != after {
		t.Fatal("another state after the restart")
	}
	mustAudit(t, e2)
}

// TestLotteryPassesAcrossARestart: the entry cap per subject key and a
// high-risk winner's payment window hold through the engine, and after a
// restart from a snapshot plus the log written after it.
func TestLotteryPassesAcrossARestart(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{}
	clock.Set(lotOpen - 1000)
	d := lotteryTestDef(5, 0)
	d.MaxUnpaidPerSubject, d.PaymentWindowHighRiskMs = 1, 20_000
	e := openTest(t, dir, clock, &d)
	clock.Set(lotOpen)
	device := func(key byte, risk uint8) sku.Holder {
		return sku.Holder{Risk: risk, Subjects: 1, Keys: [sku.SubjectKindCount]sku.SubjectKey{{key}}}
	}
	enter := func(e *Engine, user string, h sku.Holder) sku.Outcome {
		t.Helper()
		res, err := e.Enter(ctxT(t), "c1", "s1", "ep."+user, user, h)
		if err != nil {
			t.Fatal(err)
		}
		return res.Outcome
	}
	if o := enter(e, "u1", device(1, 1)); o != sku.OutcomeEntered {
		t.Fatalf("u1: %s", o)
	}
	if _, err := e.Snapshot(ctxT(t), "c1", "s1"); err != nil {
		t.Fatal(err)
	}
	if o := enter(e, "u2", device(2, 0)); o != sku.OutcomeEntered { // in the log after the snapshot
		t.Fatalf("u2: %s", o)
	}
	e.Close()
	e = openTest(t, dir, clock, nil)
	for user, key := range map[string]byte{"u3": 1, "u4": 2} {
		if o := enter(e, user, device(key, 0)); o != sku.OutcomeSubjectLimit {
			t.Fatalf("%s on device %d after the restart: %s, want SUBJECT_LIMIT", user, key, o)
		}
	}
	clock.Set(lotOpen + 90_000)
	randomness := sha256.Sum256([]byte("round 31"))
	if o, err := e.Draw(ctxT(t), "c1", "s1", lotRound, randomness[:], nil); err != nil || o != sku.OutcomeDrawStarted {
		t.Fatalf("draw: %s %v", o, err)
	}
	waitDrawn(t, e)
	for user, window := range map[string]int64{"u1": 20_000, "u2": 60_000} {
		v, err := e.Entry(ctxT(t), "c1", "s1", "ep."+user)
		if err != nil || v.Status != sku.EntryWon {
			t.Fatalf("%s: %s %v", user, v.Status, err)
		}
		if got := v.Reservation.ExpireAt - v.Reservation.CreatedAt; got != window {
			t.Errorf("%s won a window of %d ms, want %d", user, got, window)
		}
	}
	mustAudit(t, e)
}
