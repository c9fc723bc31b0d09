package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// batchServer is a fake BatchReserver that records the batches it gets:
// the first send of every third item is refused QUEUE_FULL.
type batchServer struct {
	mu      sync.Mutex
	batches [][]BatchItem
	seen    map[string]int
}

func (s *batchServer) Reserve(ctx context.Context, requestID, userID string) (Reply, error) {
	return Reply{}, fmt.Errorf("a single reserve in a batch run")
}

func (s *batchServer) ReserveBatch(ctx context.Context, items []BatchItem) ([]Reply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = append(s.batches, append([]BatchItem(nil), items...))
	out := make([]Reply, len(items))
	for i, it := range items {
		s.seen[it.RequestID]++
		if len(s.seen)%3 == 0 && s.seen[it.RequestID] == 1 {
			out[i] = Reply{Outcome: OutcomeQueueFull, RetryAfter: 50 * time.Millisecond}
			continue
		}
		out[i] = Reply{Outcome: OutcomeAccepted, ReservationID: "r-" + it.RequestID}
	}
	return out, nil
}

// With Batch 8, the driver sends the plan's attempts 8 at a time, one
// batch per SKU, each attempt once, and resends the QUEUE_FULL items
// together after the longest Retry-After; every attempt is finished once.
func TestBatchesSendEachAttemptOnceAndResendTogether(t *testing.T) {
	clock := &logicalClock{now: time.Unix(1_000_000, 0)}
	plan, err := NewPlan(PlanSpec{Attempts: 100, SKUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	servers := []*batchServer{{seen: map[string]int{}}, {seen: map[string]int{}}}
	tally := NewTally(1, NewLedger(plan), 2)
	_, err = RunLoad(context.Background(), LoadSpec{
		Plan: plan, Reservers: []Reserver{servers[0], servers[1]}, Concurrency: 1, Batch: 8,
		StartAt: clock.Now(), RequestIDPrefix: "t", Clock: clock,
		Resend: ResendPolicy{QueueFull: true, MaxResends: 3, MinBackoff: time.Millisecond},
	}, tally)
	if err != nil {
		t.Fatal(err)
	}
	if got := tally.Attempts(); got != 100 {
		t.Fatalf("%d attempts finished, want 100", got)
	}
	counts := tally.Counts()
	if counts[OutcomeAccepted] != 100 || counts[OutcomeQueueFull] == 0 {
		t.Fatalf("counts %v: want 100 accepted after the resends of some QUEUE_FULL", counts)
	}
	distinct := 0
	for sku, s := range servers {
		distinct += len(s.seen)
		for _, b := range s.batches {
			if len(b) > 8 {
				t.Fatalf("SKU %d got a batch of %d", sku, len(b))
			}
			for _, it := range b {
				for i := range plan.Len() {
					if a := plan.At(i); RequestID("t", a.Request) == it.RequestID && a.SKU != sku {
						t.Fatalf("attempt %s of SKU %d sent to SKU %d", it.RequestID, a.SKU, sku)
					}
				}
			}
		}
	}
	if distinct != int(plan.DistinctRequests()) {
		t.Fatalf("%d request_ids sent, the plan has %d", distinct, plan.DistinctRequests())
	}
}

// A batch run needs reservers that send batches.
func TestBatchRunRefusesSingleReservers(t *testing.T) {
	plan, _ := NewPlan(PlanSpec{Attempts: 1})
	_, err := RunLoad(context.Background(), LoadSpec{Plan: plan, Reservers: []Reserver{slowServer(&logicalClock{}, 0)}, Concurrency: 1, Batch: 4},
		NewTally(1, NewLedger(plan), 1))
	if err == nil {
		t.Fatal("a batch run with a single-request reserver started")
	}
}

// Every scenario runs with --batch against seckilld and passes its checks:
// the seed sale sells exactly out through batches, the payflow's final
// states match.
func TestBatchScenariosAgainstSeckilld(t *testing.T) {
	target := startSeckilld(t, serverOptions{adminToken: "secret"})
	status, result, output := runMain(t, "--target", target, "--admin-token", "secret", "--batch", "16",
		"--scenario", "seed", "--stock", "100", "--requests", "5000", "--concurrency", "8", "--seed", "7")
	if status != ExitPass {
		t.Fatalf("seed --batch 16: exit %d\n%s", status, output)
	}
	if number(t, result, "accepted") != 100 || number(t, result, "batch") != 16 {
		t.Errorf("seed --batch 16: %v", result)
	}
	for _, args := range [][]string{
		{"--scenario", "hot", "--duration", "1s", "--concurrency", "4"},
		{"--scenario", "many-skus", "--skus", "20", "--stock", "5", "--requests", "600", "--concurrency", "4"},
		{"--scenario", "payflow", "--stock", "80", "--requests", "80", "--concurrency", "4", "--payment-window", "1s"},
	} {
		status, _, output = runMain(t, append([]string{"--target", target, "--admin-token", "secret", "--batch", "32"}, args...)...)
		if status != ExitPass {
			t.Fatalf("%v --batch 32: exit %d\n%s", args, status, output)
		}
	}
}
