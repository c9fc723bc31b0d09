package httpapi

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/admission"
)

// The ingress's part of admission: the sale gate's fast refusals
// (precheck), then a permit from the SKU's gate, which package
// admission's rule sizes from the SKU's published load: the bound of
// permits in flight, the wait a reserve admitted now would see (inbox age
// and commit latency) against max_queue_wait, and the ramp back after
// slow commits.

// limits are the admission parameters (admission.Limits).
type limits struct{ admission.Limits }

// loadOf is what the admission rule reads of a SKU's published stats.
func loadOf(st *actors.Stats) admission.Load {
	return admission.Load{
		Available: int64(st.Counts.Available), Rate: st.RatePerSecond,
		InboxAge: st.OldestWait, CommitWait: st.CommitWait, CommitLatency: st.CommitLatency, Commits: st.Commits,
	}
}

// decide applies the admission rule to a SKU's stats st with its gate g.
func (l limits) decide(st *actors.Stats, g *gate) admission.Decision {
	return l.Decide(loadOf(st), &g.ramp)
}

// verdict is what the ingress answers a reserve before the engine.
type verdict uint8

const (
	verdictAdmit       verdict = iota // on to admission's permit, then the engine
	verdictUnavailable                // 503 UNAVAILABLE
	verdictNotStarted                 // 403 NOT_STARTED
	verdictEnded                      // 403 ENDED
	verdictPaused                     // 503 PAUSED
	verdictSoldOut                    // 409 SOLD_OUT (durable available = 0)
)

// refusalVerdict maps the sale gate's refusals onto the ingress's answers
// (a switch: a map lookup cost the sold-out flood more than the gate).
func refusalVerdict(o sku.Outcome) verdict {
	switch o {
	case sku.OutcomeNotStarted:
		return verdictNotStarted
	case sku.OutcomeEnded:
		return verdictEnded
	case sku.OutcomePaused:
		return verdictPaused
	case sku.OutcomeSoldOut:
		return verdictSoldOut
	}
	panic("httpapi: the sale gate refused with " + o.String())
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
// request whose result was unknown they do not apply: the engine must say
// what became of it, and a fast SOLD_OUT or ENDED could contradict a
// reservation it made after all. The load (admission's permit) applies to
// every reserve after this.
func (l limits) precheck(st *actors.Stats, now time.Time, retryOfUnknown bool) verdict {
	if st.Unavailable {
		return verdictUnavailable
	}
	if !retryOfUnknown {
		if o, refused := gateOf(st, now).Refusal(); refused {
			return refusalVerdict(o)
		}
	}
	return verdictAdmit
}

// gateOf asks the sale gate about the durable state st at now.
func gateOf(st *actors.Stats, now time.Time) sku.Verdict {
	return sku.Gate(st.Definition, st.Paused, &st.Counts, now.UnixMilli())
}

// gate holds the permits of one SKU, and its admission ramp.
type gate struct {
	inFlight   atomic.Int64
	ramp       admission.Ramp
	admissions prometheus.Counter
}

// admit takes a permit if admission's decision d allows one more in
// flight; refused, it returns the state the reserve is refused with
// (QueueFull or Throttled).
func (g *gate) admit(d admission.Decision) (refusal admission.State, ok bool) {
	for {
		n := g.inFlight.Load()
		if refusal, refused := d.Refusal(n); refused {
			return refusal, false
		}
		if g.inFlight.CompareAndSwap(n, n+1) {
			g.admissions.Inc()
			return admission.Open, true
		}
	}
}

// admitN takes up to n permits while d allows them, and returns how many
// it took (0 to n) and the state the rest are refused with.
func (g *gate) admitN(n int64, d admission.Decision) (int, admission.State) {
	refusal, _ := d.Refusal(d.Permits) // what a reserve beyond the permits hears
	for {
		cur := g.inFlight.Load()
		k := min(n, d.Permits-cur)
		if k <= 0 {
			return 0, refusal
		}
		if g.inFlight.CompareAndSwap(cur, cur+k) {
			g.admissions.Add(float64(k))
			return int(k), refusal
		}
	}
}

// release returns a permit.
func (g *gate) release() { g.inFlight.Add(-1) }

// releaseN returns n permits.
func (g *gate) releaseN(n int) {
	if n > 0 {
		g.inFlight.Add(-int64(n))
	}
}

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
