package actors

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/lottery"
)

// The crash child of a campaign-scope campaign: 64 goroutines reserve for
// 1,000 users on 5 SKUs at random, or now and then enter the campaign's
// lottery SKU, cancel half of what they get, and append every acknowledged
// reservation id (and "entry " and the request_id of each acknowledged
// new entry) to a side file, until killed.
const scopedCrashChildEnv = "SECKILL_SCOPED_CRASH_CHILD_DIR"

func TestScopedCrashChild(t *testing.T) {
	runCrashChild(t, scopedCrashChildEnv, crashScopedDefs(), func(e *Engine, round string, g, i int) string {
		user := fmt.Sprintf("u%d", rand.IntN(1000))
		if rand.IntN(8) == 0 {
			request := fmt.Sprintf("e%s-%d-%d", round, g, i)
			res, err := e.Enter(context.Background(), "c5", "lot", request, user, sku.Holder{})
			if err != nil || res.Outcome != sku.OutcomeEntered || res.Duplicate {
				return ""
			}
			return "entry " + request
		}
		s := fmt.Sprintf("s%d", rand.IntN(5)+1)
		res, err := e.Reserve(context.Background(), "c5", s, fmt.Sprintf("r%s-%d-%d", round, g, i), user)
		if err != nil || res.Outcome != sku.OutcomeAccepted {
			return ""
		}
		if rand.IntN(2) == 0 { // after the reply: the cancel's own answer does not matter
			defer e.Cancel(context.Background(), res.Reservation.ReservationID)
		}
		return res.Reservation.ReservationID
	})
}

func crashScopedDefs() []sku.Definition {
	defs := scopedDefs(5, 1<<20)
	for i := range defs {
		defs[i].StartAt, defs[i].EndAt = 0, 1<<50
	}
	// The lottery takes entries until 2100: never drawn here, so every
	// entry holds its user for good.
	const closeAt = 4_102_444_800_000
	lot := lotteryTestDef(100, 0)
	lot.CampaignID, lot.SKUID, lot.PurchaseLimit = "c5", "lot", sku.PurchaseLimitCampaign
	lot.StartAt, lot.EndAt = 0, 1<<50
	lot.Lottery.EntriesOpenAt, lot.Lottery.EntriesCloseAt = 0, closeAt
	lot.Lottery.Beacon.Round = uint64((closeAt/1000-lottery.QuicknetGenesis)/lottery.QuicknetPeriod + 2)
	return append(defs, lot)
}

// TestKillDuringCampaignScopeSale kills the child with SIGKILL at a random
// moment, three rounds on one data dir. After each kill: every
// acknowledged reservation is there, the campaign audit finds at most one
// live purchase per user, and the rebuilt registry refuses a holder on
// another SKU and lets it buy again once its purchase is cancelled.
func TestKillDuringCampaignScopeSale(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	dir := t.TempDir()
	for round := 0; round < 3; round++ {
		killChild(t, "TestScopedCrashChild", scopedCrashChildEnv, dir, round)

		acked := readLines(t, filepath.Join(dir, "acked.txt"))
		e, err := Open(Config{DataDir: dir, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		live := mustCampaignAudit(t, e)
		var holder sku.View
		var entered sku.EntryView
		var reserved []string
		for _, line := range acked {
			request, isEntry := strings.CutPrefix(line, "entry ")
			if !isEntry {
				reserved = append(reserved, line)
				continue
			}
			v, err := e.Entry(ctxT(t), "c5", "lot", request)
			if err != nil {
				t.Fatalf("round %d: acknowledged entry %s lost after kill -9: %v", round, request, err)
			}
			entered = v
		}
		checkEntriesHoldTheirUsers(t, e, round)
		if entered.UserID != "" {
			res, err := e.Reserve(ctxT(t), "c5", "s1", fmt.Sprintf("entered-%d", round), entered.UserID)
			if err != nil || res.Outcome != sku.OutcomeAlreadyEntered || res.Entered.RequestID != entered.RequestID {
				t.Fatalf("round %d: an entered user on s1 after restart: %+v %v", round, res, err)
			}
		}
		for _, id := range reserved {
			v, err := e.Get(ctxT(t), id)
			if err != nil {
				t.Fatalf("round %d: acknowledged %s lost after kill -9: %v", round, id, err)
			}
			if v.State == sku.StatePendingPayment {
				holder = v
			}
		}
		if len(acked) == 0 {
			t.Fatalf("round %d: the child acknowledged nothing", round)
		}
		if holder.ReservationID != "" {
			_, holderSKU, _, _, _ := sku.ParseReservationID(holder.ReservationID)
			other := "s1"
			if holderSKU == "s1" {
				other = "s2"
			}
			res, err := e.Reserve(ctxT(t), "c5", other, fmt.Sprintf("check-%d", round), holder.UserID)
			if err != nil || res.Outcome != sku.OutcomeAlreadyPurchased || res.Reservation.ReservationID != holder.ReservationID {
				t.Fatalf("round %d: a holder on another SKU after restart: %+v %v", round, res, err)
			}
			if _, err := e.Cancel(ctxT(t), holder.ReservationID); err != nil {
				t.Fatal(err)
			}
			res, err = e.Reserve(ctxT(t), "c5", other, fmt.Sprintf("again-%d", round), holder.UserID)
			if err != nil || res.Outcome != sku.OutcomeAccepted {
				t.Fatalf("round %d: after cancel: %+v %v", round, res, err)
			}
			if _, err := e.Cancel(ctxT(t), res.Reservation.ReservationID); err != nil && !errors.Is(err, ErrNotFound) {
				t.Fatal(err)
			}
		}
		t.Logf("round %d: %d acknowledged, %d live purchases", round, len(acked), live)
		e.Close()
	}
}

// checkEntriesHoldTheirUsers: no user holds a lottery entry that may still
// win and a live purchase on another SKU, by the SKUs' durable states.
func checkEntriesHoldTheirUsers(t *testing.T, e *Engine, round int) {
	t.Helper()
	m, _, err := e.DurableState("c5", "lot")
	if err != nil {
		t.Fatal(err)
	}
	entries := m.LiveEntries()
	for i := 1; i <= 5; i++ {
		s := fmt.Sprintf("s%d", i)
		m, _, err := e.DurableState("c5", s)
		if err != nil {
			t.Fatal(err)
		}
		for user, id := range m.LivePurchases() {
			if request, ok := entries[user]; ok {
				t.Fatalf("round %d: user %s holds entry %s and purchase %s", round, user, request, id)
			}
		}
	}
	t.Logf("round %d: %d entries hold their users", round, len(entries))
}
