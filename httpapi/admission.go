package httpapi

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
)

// Admission: a reserve reaches the SKU actor only with a
// permit; permits in flight per SKU are bounded by
//
//	min(available + retry_margin, consumer_rate × max_queue_wait)
//
// where available is the durable count the SKU published and consumer_rate
// its recent processing rate (never below Config.MinConsumerRate, so that a
// cold SKU still admits). Independently, once the oldest message in the
// SKU's mailbox has waited max_queue_wait, nothing more is admitted until
// it drains: queue age, not length, is what the user feels.

// limits are the admission parameters.
type limits struct {
	maxQueueWait time.Duration
	retryMargin  int64
	minRate      float64
}

// bound returns the number of permits a SKU may have in flight (no more than
// the stock could use, no more than the actor decides in max_queue_wait):
// min(available + retry_margin, consumer_rate × max_queue_wait), at least 1.
func (l limits) bound(st actors.Stats) int64 {
	rate := st.RatePerSecond
	if rate < l.minRate {
		rate = l.minRate
	}
	byRate := int64(rate * l.maxQueueWait.Seconds())
	if byRate < 1 {
		byRate = 1
	}
	return min(int64(st.Counts.Available)+l.retryMargin, byRate)
}

// verdict is what the ingress answers a reserve before the engine.
type verdict uint8

const (
	verdictAdmit       verdict = iota // go to the engine
	verdictUnavailable                // 503 UNAVAILABLE
	verdictNotStarted                 // 403 NOT_STARTED
	verdictEnded                      // 403 ENDED
	verdictPaused                     // 503 PAUSED
	verdictSoldOut                    // 409 SOLD_OUT (durable available = 0)
	verdictQueueFull                  // 429 QUEUE_FULL
)

// refusals maps the sale gate's refusals onto the ingress's answers.
var refusals = map[sku.Outcome]verdict{
	sku.OutcomeNotStarted: verdictNotStarted,
	sku.OutcomeEnded:      verdictEnded,
	sku.OutcomePaused:     verdictPaused,
	sku.OutcomeSoldOut:    verdictSoldOut,
}

// gateRefusal reports whether v is one of the sale gate's refusals (the
// answers precheck gives only when the request is not a retry of an
// unknown result).
func (v verdict) gateRefusal() bool {
	return v == verdictNotStarted || v == verdictEnded || v == verdictPaused || v == verdictSoldOut
}

// precheck says from published, durable stats alone whether a reserve can
// be answered without the actor. The window, the pause and sold out are the
// sale gate's (sku.Gate), asked at the server's clock. For a retry of a
// request whose result was unknown only the load checks apply: the engine
// must say what became of it, and a fast SOLD_OUT or ENDED could
// contradict a reservation it made after all.
func (l limits) precheck(st *actors.Stats, now time.Time, retryOfUnknown bool) verdict {
	if st.Unavailable {
		return verdictUnavailable
	}
	if !retryOfUnknown {
		if o, refused := gateOf(st, now).Refusal(); refused {
			return refusals[o]
		}
	}
	if st.OldestWait >= l.maxQueueWait {
		return verdictQueueFull
	}
	return verdictAdmit
}

// gateOf asks the sale gate about the durable state st at now.
func gateOf(st *actors.Stats, now time.Time) sku.Verdict {
	return sku.Gate(st.Definition, st.Paused, st.Counts, now.UnixMilli())
}

// gate holds the permits of one SKU.
type gate struct {
	inFlight   atomic.Int64
	admissions prometheus.Counter
}

// tryAcquire takes a permit if fewer than max are in flight.
func (g *gate) tryAcquire(max int64) bool {
	for {
		n := g.inFlight.Load()
		if n >= max {
			return false
		}
		if g.inFlight.CompareAndSwap(n, n+1) {
			g.admissions.Inc()
			return true
		}
	}
}

// release returns a permit.
func (g *gate) release() { g.inFlight.Add(-1) }

// gates maps a SKU to its gate. Gates are made only for SKUs the engine
// knows, so the map is bounded by the number of configured SKUs; every
// reserve reads it, without a lock.
type gates struct {
	m          sync.Map // gateKey -> *gate
	admissions *prometheus.CounterVec
}

func newGates(admissions *prometheus.CounterVec) *gates {
	return &gates{admissions: admissions}
}

// gateKey names a SKU's gate (a struct key: no string built per lookup).
type gateKey struct{ campaignID, skuID string }

// get returns the gate of a SKU the engine knows, making it on first use.
func (g *gates) get(campaignID, skuID string) *gate {
	key := gateKey{campaignID, skuID}
	if gt, ok := g.m.Load(key); ok {
		return gt.(*gate)
	}
	gt, _ := g.m.LoadOrStore(key, &gate{admissions: g.admissions.WithLabelValues(campaignID, skuID)})
	return gt.(*gate)
}

// inFlight returns the permits in flight for a SKU (0 when it has no gate).
func (g *gates) inFlight(campaignID, skuID string) int64 {
	gt, ok := g.m.Load(gateKey{campaignID, skuID})
	if !ok {
		return 0
	}
	return gt.(*gate).inFlight.Load()
}
