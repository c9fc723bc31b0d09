package admission

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

var limits = Limits{MaxQueueWait: time.Second, RetryMargin: 10, MinRate: 50}

func TestBound(t *testing.T) {
	for _, c := range []struct {
		available int64
		rate      float64
		permits   int64
	}{
		{available: 100, rate: 0, permits: 50},     // cold: the floor
		{available: 100, rate: 5000, permits: 110}, // stock + margin
		{available: 0, rate: 5000, permits: 10},
		{available: 100, rate: 80, permits: 80},
	} {
		if p := limits.Bound(c.available, c.rate); p != c.permits {
			t.Errorf("available %d rate %v: %d, want %d", c.available, c.rate, p, c.permits)
		}
	}
	tiny := Limits{MaxQueueWait: time.Millisecond, RetryMargin: 1, MinRate: 1}
	if p := tiny.Bound(100, 0); p != 1 {
		t.Errorf("the bound never goes below 1 permit: %d", p)
	}
}

func TestDecide(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, c := range []struct {
		name    string
		ld      Load
		state   State
		permits int64
		wait    time.Duration
	}{
		{"idle", Load{Available: 100}, Open, 50, 0},
		{"fast disk", Load{Available: 100, InboxAge: ms(100), CommitLatency: ms(2), CommitWait: ms(1)}, Open, 50, ms(102)},
		{"inbox full", Load{Available: 100, InboxAge: ms(1000)}, QueueFull, 0, ms(1000)},
		{"slow commits", Load{Available: 100, CommitLatency: ms(1600), CommitWait: ms(300)}, Throttled, 0, ms(1600)},
		{"a stalled commit", Load{Available: 100, CommitLatency: ms(2), CommitWait: ms(1000)}, Throttled, 0, ms(1000)},
		{"inbox and commits add up", Load{Available: 100, InboxAge: ms(500), CommitLatency: ms(500)}, Throttled, 0, ms(1000)},
		{"slow, nothing waits: a probe", Load{Available: 100, CommitLatency: ms(1600)}, Throttled, 1, ms(1600)},
	} {
		d := limits.Decide(c.ld, new(Ramp))
		if d.State != c.state || d.Permits != c.permits || d.Wait != c.wait {
			t.Errorf("%s: %v %d permits, wait %v; want %v %d, %v", c.name, d.State, d.Permits, d.Wait, c.state, c.permits, c.wait)
		}
		if d.Probe != (c.name == "slow, nothing waits: a probe") {
			t.Errorf("%s: probe %v", c.name, d.Probe)
		}
	}
}

// After slow commits the SKU comes back one permit, then twice as many per
// group commit, and a slow commit on the way starts it over.
func TestRampStepsBack(t *testing.T) {
	var r Ramp
	slow := Load{Available: 1000, CommitLatency: 2 * time.Second, Commits: 7}
	fast := func(commits uint64) Load {
		return Load{Available: 1000, CommitLatency: time.Millisecond, Commits: commits}
	}
	if d := limits.Decide(slow, &r); d.State != Throttled || r.from.Load() == 0 {
		t.Fatalf("slow commits: %+v", d)
	}
	// bound 50: steps 1, 2, 4, 8, 16, 32, then open.
	for i, want := range []int64{1, 2, 4, 8, 16, 32} {
		if d := limits.Decide(fast(7+uint64(i)), &r); d.State != Throttled || d.Permits != want {
			t.Fatalf("commit %d after: %v %d permits, want THROTTLED %d", i, d.State, d.Permits, want)
		}
	}
	if d := limits.Decide(fast(13), &r); d.State != Open || d.Permits != 50 || r.from.Load() != 0 {
		t.Fatalf("six commits after: %+v", d)
	}
	// Slow again halfway: back to the first step.
	limits.Decide(Load{Available: 1000, CommitLatency: 2 * time.Second, Commits: 20}, &r)
	limits.Decide(fast(22), &r)
	limits.Decide(Load{Available: 1000, CommitWait: time.Second, CommitLatency: time.Millisecond, Commits: 22}, &r)
	if d := limits.Decide(fast(22), &r); d.Permits != 1 {
		t.Fatalf("a stall during the ramp: %d permits after, want 1", d.Permits)
	}
	// The log reopened: its count starts over, the ramp with it.
	if d := limits.Decide(fast(0), &r); d.State != Throttled || d.Permits != 1 {
		t.Fatalf("after the log reopened: %+v", d)
	}
	if d := limits.Decide(fast(1), &r); d.Permits != 2 {
		t.Fatalf("a commit after the log reopened: %+v", d)
	}
}

// The rule's promises over random loads, read as a SKU would publish
// them over (simulated) time: commits counted up, a log reopened now and
// then.
//   - it never admits beyond the bound;
//   - once the inbox's oldest call has waited MaxQueueWait, nothing;
//   - once the judged wait reaches MaxQueueWait, nothing but one probe,
//     and the probe only while no call waits anywhere;
//   - after that, at most 2^n permits n group commits later;
//   - and the bound again once 2^n reaches it, while commits are fast.
func TestDecideProperties(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 0xad))
		l := Limits{MaxQueueWait: time.Duration(1+rng.IntN(2000)) * time.Millisecond, RetryMargin: int64(rng.IntN(64)), MinRate: float64(1 + rng.IntN(5000))}
		var r Ramp
		var commits uint64
		throttledAt, throttled := uint64(0), false
		for i := range 500 {
			switch rng.IntN(20) {
			case 0:
				commits, throttledAt = 0, 0 // the log reopened: a ramp starts over
			default:
				commits += uint64(rng.IntN(3))
			}
			w := l.MaxQueueWait
			age := func() time.Duration {
				if rng.IntN(3) == 0 {
					return 0
				}
				return time.Duration(rng.Int64N(int64(2 * w)))
			}
			ld := Load{Available: rng.Int64N(100_000), Rate: rng.Float64() * 10_000, InboxAge: age() / 4,
				CommitWait: age() / 2, CommitLatency: age() / 2, Commits: commits}
			d := l.Decide(ld, &r)
			wait := ld.InboxAge + max(ld.CommitWait, ld.CommitLatency)
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf("seed %d step %d, load %+v, limits %+v: %+v: "+format, append([]any{seed, i, ld, l, d}, args...)...)
			}
			if d.Wait != wait || d.Permits < 0 || d.Permits > d.Bound || d.Bound != l.Bound(ld.Available, ld.Rate) {
				fail("wait or permits out of bounds")
			}
			switch {
			case ld.InboxAge >= w:
				if d.State != QueueFull || d.Permits != 0 {
					fail("the inbox is full")
				}
			case wait >= w:
				probe := ld.InboxAge == 0 && ld.CommitWait == 0
				if d.State != Throttled || d.Permits != 0 && !probe || d.Permits > 1 || d.Probe != (d.Permits == 1) {
					fail("commits are too slow")
				}
				throttledAt, throttled = commits, true
			case throttled:
				n := commits - throttledAt
				if n < 62 && d.Permits > 1<<n {
					fail("%d permits %d commits after the throttle", d.Permits, n)
				}
				if n >= 62 || 1<<n >= d.Bound {
					if d.State != Open || d.Permits != d.Bound {
						fail("still ramping %d commits after the throttle", n)
					}
					throttled = false
				}
			default:
				if d.State != Open || d.Permits != d.Bound {
					fail("not open")
				}
			}
		}
	}
}

// Many goroutines share a SKU's Ramp (the ingress's reserves): reading
// the same load, they get what one caller alone would.
func TestRampSharedByCallers(t *testing.T) {
	var r Ramp
	limits.Decide(Load{Available: 1000, CommitLatency: 2 * time.Second, Commits: 3}, &r)
	for c := uint64(3); c < 12; c++ {
		want := min(int64(1)<<(c-3), 50)
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if d := limits.Decide(Load{Available: 1000, Commits: c}, &r); d.Permits != want {
					t.Errorf("goroutine %d: %d permits %d commits after, want %d", g, d.Permits, c-3, want)
				}
			}()
		}
		wg.Wait()
	}
	if r.from.Load() != 0 {
		t.Fatal("still ramping after the bound was reached")
	}
}

func TestRefusal(t *testing.T) {
	for _, c := range []struct {
		d        Decision
		inFlight int64
		state    State
		refused  bool
	}{
		{Decision{State: Open, Permits: 5}, 4, Open, false},
		{Decision{State: Open, Permits: 5}, 5, QueueFull, true},
		{Decision{State: Throttled, Permits: 2}, 2, Throttled, true},
		{Decision{State: Throttled, Permits: 1, Probe: true}, 0, Open, false},
		{Decision{State: QueueFull}, 0, QueueFull, true},
	} {
		if s, refused := c.d.Refusal(c.inFlight); s != c.state || refused != c.refused {
			t.Errorf("%+v with %d in flight: %v %v, want %v %v", c.d, c.inFlight, s, refused, c.state, c.refused)
		}
	}
}
