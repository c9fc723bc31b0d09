package bench

import (
	"strings"
	"testing"
)

func TestLedgerFindsEveryKindOfDoubleSale(t *testing.T) {
	plan, err := NewPlan(PlanSpec{Attempts: 10, SKUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	ledger := NewLedger(plan)
	accept := func(request, user int64, sku int, reservation, token string) {
		ledger.Note(Attempt{Request: request, User: user, SKU: sku}, Reply{Outcome: OutcomeAccepted, ReservationID: reservation, TokenID: token})
	}
	accept(1, 1, 0, "a", "1")
	accept(1, 1, 0, "a", "1") // a retry answered the same: fine
	accept(2, 2, 0, "b", "2")
	accept(3, 2, 0, "c", "3") // user 2 wins twice
	accept(4, 4, 0, "d", "2") // token 2 of SKU 0 again
	accept(5, 5, 1, "e", "1") // token 1 of another SKU: fine
	accept(6, 6, 1, "f", "6")
	accept(6, 6, 1, "g", "7") // request 6 answered with two reservations
	report := ledger.Check(2, func(int) int64 { return 3 })
	if report.AcceptedBySKU[0] != 4 || report.AcceptedBySKU[1] != 3 || report.Accepted != 7 {
		t.Errorf("accepted %v / %d", report.AcceptedBySKU, report.Accepted)
	}
	if report.Oversold != 1 {
		t.Errorf("oversold %d, want 1 (SKU 0 sold 4 of 3)", report.Oversold)
	}
	if report.DuplicateWinners != 2 {
		t.Errorf("duplicate winners %d, want 2 (users 2 and 6)", report.DuplicateWinners)
	}
	if report.TokenReused != 1 {
		t.Errorf("token reused %d, want 1", report.TokenReused)
	}
	if report.RetryMismatches != 1 {
		t.Errorf("retry mismatches %d, want 1", report.RetryMismatches)
	}
	joined := strings.Join(report.Examples, "\n")
	for _, want := range []string{"oversold", "duplicate_winner", "token_reused", "retry_mismatch"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no %s example in %s", want, joined)
		}
	}
}

func TestLedgerFlagsARetryAcceptedOnceAndRefusedOnce(t *testing.T) {
	plan, err := NewPlan(PlanSpec{Attempts: 2000, RetryShare: 0.5, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	var retried int64 = -1
	for i := int64(0); i < plan.Len() && retried < 0; i++ {
		if plan.At(i).Kind == AttemptRetry {
			retried = plan.At(i).Request
		}
	}
	ledger := NewLedger(plan)
	ledger.Note(Attempt{Request: retried, User: 1}, Reply{Outcome: OutcomeAccepted, ReservationID: "x"})
	ledger.Note(Attempt{Request: retried, User: 1}, Reply{Outcome: OutcomeSoldOut})
	if got := ledger.Check(1, func(int) int64 { return 10 }).RetryMismatches; got != 1 {
		t.Errorf("retry mismatches %d, want 1", got)
	}
}
