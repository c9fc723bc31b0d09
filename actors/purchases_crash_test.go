package actors

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/seckill/seckill/actors/sku"
)

// The crash child of a campaign-scope campaign: 64 goroutines reserve for
// 1,000 users on 5 SKUs at random, cancel half of what they get, and
// append every acknowledged reservation id to a side file, until killed.
const scopedCrashChildEnv = "SECKILL_SCOPED_CRASH_CHILD_DIR"

func TestScopedCrashChild(t *testing.T) {
	runCrashChild(t, scopedCrashChildEnv, crashScopedDefs(), func(e *Engine, round string, g, i int) string {
		user := fmt.Sprintf("u%d", rand.IntN(1000))
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
	return defs
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
		for _, id := range acked {
			v, err := e.Get(ctxT(t), id)
			if err != nil {
				t.Fatalf("round %d: acknowledged %s lost after kill -9: %v", round, id, err)
			}
			if v.State == sku.StatePendingPayment {
				holder = v
			}
		}
		if round > 0 && len(acked) == 0 {
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
