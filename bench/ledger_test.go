package bench

import (
	"github.com/seckill/seckill/internal/benchsize"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLedgerFindsEveryKindOfDoubleSale(t *testing.T) {
	plan, err := NewPlan(PlanSpec{Attempts: 10, SKUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	ledger := NewLedger(plan)
	at := time.Unix(1_000_000, 0)
	accept := func(request, user int64, sku int, reservation, token string) {
		at = at.Add(time.Millisecond)
		ledger.Note(int(request), at, Attempt{Request: request, User: user, SKU: sku}, Reply{Outcome: OutcomeAccepted, ReservationID: reservation, TokenID: token})
	}
	accept(1, 1, 0, "a", "1")
	accept(1, 1, 0, "a", "1") // a retry answered the same: fine
	accept(2, 2, 0, "b", "2")
	accept(3, 2, 0, "c", "3") // user 2 wins twice
	accept(4, 4, 0, "d", "2") // token 2 of SKU 0 again
	accept(5, 5, 1, "e", "1") // token 1 of another SKU: fine
	accept(6, 6, 1, "f", "6")
	accept(6, 6, 1, "g", "7") // request 6 answered with two reservations
	report := ledger.Check(2, func(int) int64 { return 3 }, 0)
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
	at := time.Unix(1_000_000, 0)
	ledger.Note(0, at, Attempt{Request: retried, User: 1}, Reply{Outcome: OutcomeAccepted, ReservationID: "x"})
	ledger.Note(1, at.Add(time.Millisecond), Attempt{Request: retried, User: 1}, Reply{Outcome: OutcomeSoldOut})
	if got := ledger.Check(1, func(int) int64 { return 10 }, 0).RetryMismatches; got != 1 {
		t.Errorf("retry mismatches %d, want 1", got)
	}
}

// Answers noted by several workers are read in the order they arrived, not
// worker by worker: the count of retry mismatches depends on it.
func TestLedgerMergesWorkersInArrivalOrder(t *testing.T) {
	ledger := NewLedger(nil)
	start := time.Unix(1_000_000, 0)
	note := func(worker int, ms int, reservation string) {
		ledger.Note(worker, start.Add(time.Duration(ms)*time.Millisecond), Attempt{Request: 7, User: 7},
			Reply{Outcome: OutcomeAccepted, ReservationID: reservation})
	}
	note(0, 3, "a")
	note(1, 1, "b")
	note(2, 2, "a")
	note(ledgerShards+1, 4, "c") // shares worker 1's shard
	// In arrival order b, a, a, c: request 7 was first answered b, then
	// three times otherwise.
	if got := ledger.Check(1, func(int) int64 { return 10 }, 0).RetryMismatches; got != 3 {
		t.Errorf("retry mismatches %d, want 3", got)
	}
	var order []string
	for _, reservation := range ledger.Accepted() {
		order = append(order, reservation.ReservationID)
	}
	if strings.Join(order, ",") != "b,a,c" {
		t.Errorf("accepted in order %v, want b, a, c", order)
	}
}

func TestLedgerKeepsEveryAnswerOfConcurrentWorkers(t *testing.T) {
	ledger := NewLedger(nil)
	// More workers than shards, more answers than a chunk, more id bytes
	// per shard than a text chunk: 100 workers on 64 shards put two on
	// shards 0-35, whose 4,000 answers' ids take about 70 KB (a text chunk
	// is 64 KiB), and at least 2,000 answers on every shard (a chunk is
	// 1,024).
	const workers, each = 100, 2000
	start := time.Unix(1_000_000, 0)
	var wait sync.WaitGroup
	for worker := range workers {
		wait.Add(1)
		go func() {
			defer wait.Done()
			for i := range each {
				request := int64(worker*each + i)
				ledger.Note(worker, start.Add(time.Duration(i)*time.Microsecond), Attempt{Request: request, User: request},
					Reply{Outcome: OutcomeAccepted, ReservationID: notedID("r", request), TokenID: notedID("t", request),
						ExpireAt: start.Add(time.Duration(request) * time.Millisecond)})
			}
		}()
	}
	wait.Wait()
	report := ledger.Check(1, func(int) int64 { return workers * each }, 0)
	if report.Accepted != workers*each || report.RetryMismatches != 0 || report.DuplicateWinners != 0 || report.Oversold != 0 {
		t.Fatalf("report %+v", report)
	}
	accepted := ledger.Accepted()
	if len(accepted) != workers*each {
		t.Fatalf("%d accepted, want %d", len(accepted), workers*each)
	}
	for _, a := range accepted {
		if a.ReservationID != notedID("r", a.Request) || a.TokenID != notedID("t", a.Request) ||
			!a.ExpireAt.Equal(start.Add(time.Duration(a.Request)*time.Millisecond)) {
			t.Fatalf("request %d read back as %+v", a.Request, a)
		}
	}
}

// notedID is an id of varying length for request.
func notedID(prefix string, request int64) string {
	return prefix + strings.Repeat("x", int(request%7)) + strconv.FormatInt(request, 10)
}

// BenchmarkLedgerCheck analyses 2,000,000 acceptances, what a 5 s hot cell
// of the in-process engine leaves (the comparison waits for it per cell).
func BenchmarkLedgerCheck(b *testing.B) {
	ledger := NewLedger(nil)
	start := time.Now()
	n := benchsize.Pick[int64](2_000_000, 1_000)
	for i := range n {
		ledger.Note(int(i%256), start.Add(time.Duration(i)), Attempt{Request: i, User: i}, Reply{Outcome: OutcomeAccepted,
			ReservationID: "cmp-hot-c1024-abcdefgh~sku-1~" + strconv.FormatInt(i, 10) + "~0123456789abcdef", TokenID: strconv.FormatInt(i, 10)})
	}
	for b.Loop() {
		if report := ledger.Check(1, func(int) int64 { return 1 << 40 }, 0); report.Accepted != n {
			b.Fatalf("accepted %d", report.Accepted)
		}
	}
}

// Units counts distinct requests accepted, a retried one once, while the
// answers count every ACCEPTED; LastUnitAt is the first answer of the last
// distinct reservation.
func TestLedgerUnitsAndLastUnit(t *testing.T) {
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
	if _, ok := ledger.LastUnitAt(); ok {
		t.Fatal("a last unit before any acceptance")
	}
	start := time.Now()
	accept := func(worker int, ms int, request int64, reservation string) {
		ledger.Note(worker, start.Add(time.Duration(ms)*time.Millisecond), Attempt{Request: request, User: request},
			Reply{Outcome: OutcomeAccepted, ReservationID: reservation})
	}
	accept(0, 1, retried, "r")
	accept(1, 2, retried, "r") // the same request answered again
	accept(2, 3, retried+100_000, "s")
	accept(3, 5, retried, "r")
	if got := ledger.Units(); got != 2 {
		t.Fatalf("units %d, want 2", got)
	}
	if last, ok := ledger.LastUnitAt(); !ok || !last.Equal(start.Add(3*time.Millisecond)) {
		t.Fatalf("last unit at %v, want %v", last.Sub(start), 3*time.Millisecond)
	}
}

// With release_on_close, a token that went back to the pool when its
// reservation expired is handed to the next reservation: that is not a
// reuse. Only a token handed out again before its holder's expire_at (two
// reservations holding it at once) is, and without release every second
// holder is. Answers are noted out of server order (a slow first answer).
func TestLedgerAllowsATokenReleasedByAnExpiry(t *testing.T) {
	const window = 2 * time.Second
	created := time.Unix(1_000_000, 0) // server time of the first reservations
	arrival := created
	ledger := NewLedger(nil)
	accept := func(request int64, reservation, token string, createdAt time.Time) {
		arrival = arrival.Add(time.Millisecond)
		ledger.Note(int(request), arrival, Attempt{Request: request, User: request},
			Reply{Outcome: OutcomeAccepted, ReservationID: reservation, TokenID: token, ExpireAt: createdAt.Add(window)})
	}
	accept(1, "b", "1", created.Add(window))                    // token 1 once a expired ...
	accept(2, "a", "1", created)                                // ... whose answer came later
	accept(3, "c", "1", created.Add(2*window+time.Millisecond)) // and again once b expired
	accept(4, "d", "2", created)                                // token 2 ...
	accept(5, "e", "2", created.Add(window-time.Millisecond))   // ... again while d still held it
	accept(6, "f", "3", created)                                // token 3, then an answer without expire_at
	ledger.Note(7, arrival.Add(time.Millisecond), Attempt{Request: 7, User: 7},
		Reply{Outcome: OutcomeAccepted, ReservationID: "g", TokenID: "3"}) // cannot prove a release
	report := ledger.Check(1, func(int) int64 { return 10 }, window)
	if report.TokenReused != 2 {
		t.Errorf("token reused %d, want 2 (token 2 held by d and e at once, token 3 by f and g): %v", report.TokenReused, report.Examples)
	}
	handovers := make([]string, 0, len(report.TokenHandovers))
	for _, h := range report.TokenHandovers {
		handovers = append(handovers, h.Earlier+">"+h.Later)
	}
	if got := strings.Join(handovers, ","); got != "a>b,b>c" {
		t.Errorf("handovers %s, want a>b,b>c", got)
	}
	if got := ledger.Check(1, func(int) int64 { return 10 }, 0).TokenReused; got != 4 {
		t.Errorf("without release: token reused %d, want 4 (b, c, e, g)", got)
	}
}
