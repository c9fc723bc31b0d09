package httpapi

import (
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/admission"
)

func stats(available, reserved uint32, rate float64, oldest time.Duration) actors.Stats {
	return actors.Stats{
		CampaignID: "c", SKUID: "s",
		Definition:    &sku.Definition{CampaignID: "c", SKUID: "s", StartAt: 1000, EndAt: 2000, PaymentWindowMs: 10, SaleLimit: 100},
		Counts:        sku.Counts{SaleLimit: 100, Available: available, Reserved: reserved, Confirmed: 100 - available - reserved},
		RatePerSecond: rate,
		OldestWait:    oldest,
	}
}

var testLimits = limits{admission.Limits{MaxQueueWait: time.Second, RetryMargin: 10, MinRate: 50}}

func TestPrecheck(t *testing.T) {
	l := testLimits
	at := func(ms int64) time.Time { return time.UnixMilli(ms) }
	paused := stats(5, 0, 0, 0)
	paused.Paused = true
	down := stats(5, 0, 0, 0)
	down.Unavailable = true
	for _, c := range []struct {
		name    string
		st      actors.Stats
		now     int64
		unknown bool
		want    verdict
	}{
		{"open", stats(5, 0, 0, 0), 1500, false, verdictAdmit},
		{"before start", stats(5, 0, 0, 0), 999, false, verdictNotStarted},
		{"at end", stats(5, 0, 0, 0), 2000, false, verdictEnded},
		{"paused", paused, 1500, false, verdictPaused},
		{"unavailable", down, 1500, false, verdictUnavailable},
		{"sold out", stats(0, 3, 0, 0), 1500, false, verdictSoldOut},
		{"retry of unknown skips sold out", stats(0, 3, 0, 0), 1500, true, verdictAdmit},
		{"retry of unknown skips the window", stats(5, 0, 0, 0), 2500, true, verdictAdmit},
		{"retry of unknown on a failed SKU", down, 1500, true, verdictUnavailable},
	} {
		if got := l.precheck(&c.st, at(c.now), c.unknown); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

func TestSKUStatus(t *testing.T) {
	l := testLimits
	at := func(ms int64) time.Time { return time.UnixMilli(ms) }
	paused := stats(5, 0, 0, 0)
	paused.Paused = true
	slow := stats(5, 0, 0, 0)
	slow.CommitLatency = 1500 * time.Millisecond
	stalled := stats(5, 0, 0, 100*time.Millisecond)
	stalled.CommitWait, stalled.CommitLatency = 900*time.Millisecond, time.Millisecond
	for _, c := range []struct {
		name     string
		st       actors.Stats
		now      int64
		inFlight int64
		want     string
		final    bool
	}{
		{"open", stats(5, 0, 0, 0), 1500, 0, StatusOpen, false},
		{"not started", stats(5, 0, 0, 0), 10, 0, StatusNotStarted, false},
		{"ended with stock", stats(5, 0, 0, 0), 2000, 0, StatusEnded, true},
		{"ended sold out", stats(0, 4, 0, 0), 2000, 0, StatusFinalSoldOut, true},
		{"sold, nothing reserved", stats(0, 0, 0, 0), 1500, 0, StatusFinalSoldOut, true},
		{"sold, some may come back", stats(0, 4, 0, 0), 1500, 0, StatusTempSoldOut, false},
		{"paused", paused, 1500, 0, StatusPaused, false},
		{"above half of max_queue_wait", stats(5, 0, 0, 600*time.Millisecond), 1500, 0, StatusThrottled, false},
		{"queue age", stats(5, 0, 0, time.Second), 1500, 0, StatusQueueFull, false},
		{"permits", stats(50, 0, 0, 0), 1500, 50, StatusQueueFull, false},
		{"slow commits", slow, 1500, 0, StatusThrottled, false},
		{"slow commits, the probe out", slow, 1500, 1, StatusThrottled, false},
		{"a stalled commit", stalled, 1500, 0, StatusThrottled, false},
	} {
		g := &gate{}
		g.inFlight.Store(c.inFlight)
		got, final := l.skuStatus(c.st, at(c.now), g)
		if got != c.want || final != c.final {
			t.Errorf("%s: %s %v, want %s %v", c.name, got, final, c.want, c.final)
		}
	}
}

func TestAnswerCacheIsBounded(t *testing.T) {
	c := newAnswerCache(64)
	for i := 0; i < 10_000; i++ {
		c.putFinal(requestKey("c", "s", string(rune('a'+i%26))+time.Duration(i).String()), "u", reply{status: 202})
	}
	if n := c.len(); n > 64 {
		t.Fatalf("cache holds %d entries, bound 64", n)
	}
	k, k2 := requestKey("c", "s", "k"), requestKey("c", "s", "k2")
	c.putFinal(k, "u", reply{status: 202})
	c.markUnknown(k, "u")
	if a, ok := c.get(k); !ok || a.unknown || a.rep.status != 202 {
		t.Fatalf("an unknown mark replaced a final answer: %+v", a)
	}
	c.markUnknown(k2, "u")
	c.putFinal(k2, "u", reply{status: 409})
	if a, _ := c.get(k2); a.unknown || a.rep.status != 409 {
		t.Fatalf("a final answer did not replace the unknown mark: %+v", a)
	}
}

func TestFlightsShareOneAnswer(t *testing.T) {
	f := newFlights()
	u := userKey("c", "s", "u")
	fl, leader := f.join(u, "r1")
	if !leader {
		t.Fatal("first join is not the leader")
	}
	fl2, leader2 := f.join(u, "r2")
	if leader2 || fl2 != fl {
		t.Fatal("second join did not join the flight")
	}
	f.finish(u, fl, reply{status: 202}, true)
	<-fl2.done
	if fl2.rep.status != 202 || fl2.requestID != "r1" || !fl2.shared {
		t.Fatalf("joined answer %+v", fl2)
	}
	if _, leader := f.join(u, "r2"); !leader {
		t.Fatal("a finished flight was not removed")
	}
}

// The same user_id or request_id on two SKUs has one hash: the tables keep
// the two apart (a flight each, no answer of one SKU for the other).
func TestDedupKeysOfTwoSKUsShareAHashNotAnEntry(t *testing.T) {
	f := newFlights()
	a, b := userKey("c", "s1", "u"), userKey("c", "s2", "u")
	if a.hash != b.hash {
		t.Fatal("the keys of one user_id on two SKUs hash apart: this test tests nothing")
	}
	fa, leaderA := f.join(a, "r1")
	fb, leaderB := f.join(b, "r1")
	if !leaderA || !leaderB || fa == fb {
		t.Fatal("one user on two SKUs shares a flight")
	}
	f.finish(a, fa, reply{status: 202}, true)
	if !f.busy(b) || f.busy(a) {
		t.Fatalf("after the first SKU's flight: busy %v, %v", f.busy(a), f.busy(b))
	}
	if fb2, leader := f.join(b, "r2"); leader || fb2 != fb {
		t.Fatal("the second SKU's flight was lost")
	}
	f.finish(b, fb, reply{status: 202}, true)
	if f.busy(b) {
		t.Fatal("a finished flight is still busy")
	}

	c := newAnswerCache(64)
	ra, rb := requestKey("c", "s1", "r"), requestKey("c", "s2", "r")
	c.putFinal(ra, "u", reply{status: 409})
	if _, ok := c.get(rb); ok {
		t.Fatal("a request_id's answer on one SKU answered it on another")
	}
	c.markUnknown(rb, "u")
	if a, ok := c.get(rb); !ok || !a.unknown {
		t.Fatalf("the unknown mark on the second SKU: %+v %v", a, ok)
	}
}
