package bench

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"
)

// logicalClock is a Clock that moves only when told: sleeping jumps to the
// wake-up time, and the fake server below advances it by its service time.
type logicalClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *logicalClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *logicalClock) SleepUntil(ctx context.Context, t time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
	return ctx.Err() == nil
}

func (c *logicalClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// slowServer takes service time per request on the logical clock.
func slowServer(clock *logicalClock, service time.Duration) Reserver {
	return ReserverFunc(func(ctx context.Context, requestID, userID string) (Reply, error) {
		clock.advance(service)
		return Reply{Outcome: OutcomeAccepted, ReservationID: "r-" + requestID}, nil
	})
}

func runLogical(t *testing.T, rate float64, attempts int64, reserver Reserver, clock *logicalClock, resend ResendPolicy) *Tally {
	t.Helper()
	plan, err := NewPlan(PlanSpec{Attempts: attempts})
	if err != nil {
		t.Fatal(err)
	}
	tally := NewTally(1, NewLedger(plan), 1)
	_, err = RunLoad(context.Background(), LoadSpec{
		Plan: plan, Reservers: []Reserver{reserver}, Concurrency: 1, Rate: rate,
		StartAt: clock.Now(), RequestIDPrefix: "t", Resend: resend, Clock: clock,
	}, tally)
	if err != nil {
		t.Fatal(err)
	}
	return tally
}

func within(got, want, tolerance float64) bool { return math.Abs(got-want) <= tolerance*want }

// A server that needs 10 ms per request, offered 1 request per ms by one
// worker: the open loop must charge each request its wait since the
// intended send time (request i: 9i + 10 ms); a closed loop sees 10 ms.
func TestOpenLoopCountsLatencyFromTheIntendedSendTime(t *testing.T) {
	clock := &logicalClock{now: time.Unix(1_000_000, 0)}
	tally := runLogical(t, 1000, 50, slowServer(clock, 10*time.Millisecond), clock, ResendPolicy{})
	summary := Summarize(tally.Latency().Overall)
	if summary.Count != 50 {
		t.Fatalf("count %d, want 50", summary.Count)
	}
	if !within(summary.Max, 9*49+10, 0.01) {
		t.Errorf("max %.3f ms, want 451 (the last request waited 441 ms for its turn)", summary.Max)
	}
	if !within(summary.P50, 9*24+10, 0.05) {
		t.Errorf("p50 %.3f ms, want about 226", summary.P50)
	}
	latency := tally.Latency().Overall
	if min := float64(latency.Min()) / 1000; !within(min, 10, 0.01) {
		t.Errorf("min %.3f ms, want 10", min)
	}
}

func TestClosedLoopCountsLatencyFromTheActualSend(t *testing.T) {
	clock := &logicalClock{now: time.Unix(1_000_000, 0)}
	tally := runLogical(t, 0, 50, slowServer(clock, 10*time.Millisecond), clock, ResendPolicy{})
	summary := Summarize(tally.Latency().Overall)
	if summary.Count != 50 || !within(summary.P50, 10, 0.01) || !within(summary.Max, 10, 0.01) {
		t.Errorf("summary %+v, want 50 answers of 10 ms", summary)
	}
}

// An open loop below the server's capacity keeps the schedule: every
// request waits only for its own service.
func TestOpenLoopBelowCapacityKeepsTheSchedule(t *testing.T) {
	clock := &logicalClock{now: time.Unix(1_000_000, 0)}
	start := clock.Now()
	tally := runLogical(t, 50, 20, slowServer(clock, 10*time.Millisecond), clock, ResendPolicy{})
	summary := Summarize(tally.Latency().Overall)
	if !within(summary.Max, 10, 0.01) {
		t.Errorf("max %.3f ms, want 10", summary.Max)
	}
	// 20 requests at 50/s: the last is due at 380 ms and done at 390 ms.
	if elapsed := clock.Now().Sub(start); elapsed != 390*time.Millisecond {
		t.Errorf("elapsed %v, want 390ms", elapsed)
	}
}

func TestQueueFullIsResentAfterRetryAfterAndBounded(t *testing.T) {
	clock := &logicalClock{now: time.Unix(1_000_000, 0)}
	calls := 0
	server := ReserverFunc(func(ctx context.Context, requestID, userID string) (Reply, error) {
		calls++
		if calls <= 2 {
			return Reply{Outcome: OutcomeQueueFull, RetryAfter: 100 * time.Millisecond}, nil
		}
		return Reply{Outcome: OutcomeAccepted, ReservationID: "r1"}, nil
	})
	start := clock.Now()
	policy := ResendPolicy{QueueFull: true, MaxResends: 5, MinBackoff: time.Millisecond, MaxBackoff: time.Second}
	tally := runLogical(t, 0, 1, server, clock, policy)
	counts := tally.Counts()
	if counts[OutcomeQueueFull] != 2 || counts[OutcomeAccepted] != 1 || tally.Attempts() != 1 {
		t.Errorf("counts %v, attempts %d", counts, tally.Attempts())
	}
	if waited := clock.Now().Sub(start); waited != 200*time.Millisecond {
		t.Errorf("waited %v, want 2 x Retry-After = 200ms", waited)
	}

	calls = -100 // always full
	policy.MaxResends = 3
	tally = runLogical(t, 0, 1, server, clock, policy)
	if got := tally.Counts()[OutcomeQueueFull]; got != 4 {
		t.Errorf("%d sends, want 1 + 3 resends", got)
	}
}

func TestDefinitiveAnswersAreNotResent(t *testing.T) {
	clock := &logicalClock{now: time.Unix(1_000_000, 0)}
	server := ReserverFunc(func(ctx context.Context, requestID, userID string) (Reply, error) {
		return Reply{Outcome: OutcomeSoldOut}, nil
	})
	policy := ResendPolicy{QueueFull: true, Uncertain: true, MaxResends: 5}
	tally := runLogical(t, 0, 10, server, clock, policy)
	if got := tally.Sent(); got != 10 {
		t.Errorf("sent %d, want 10", got)
	}
}

func TestRunLoadRejectsUnboundedRuns(t *testing.T) {
	plan, _ := NewPlan(PlanSpec{})
	_, err := RunLoad(context.Background(), LoadSpec{Plan: plan, Reservers: []Reserver{slowServer(&logicalClock{}, 0)}, Concurrency: 1}, NewTally(1, nil, 1))
	if err == nil {
		t.Fatal("an unbounded plan without a duration was accepted")
	}
}

func TestRequestAndUserIDs(t *testing.T) {
	if got := RequestID("bench-hot-x", 12345); got != "bench-hot-x-12345" {
		t.Errorf("request id %q", got)
	}
	if got := RequestID("p", 0); got != "p-0" {
		t.Errorf("request id %q", got)
	}
	if got := UserID(math.MaxInt64); got != "u9223372036854775807" {
		t.Errorf("user id %q", got)
	}
}
