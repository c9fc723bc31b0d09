package httpapi

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/valyala/fasthttp"
)

// Per-SKU counters of the reserve answers the HTTP side gives, for the
// dashboard (/admin/stats): what only the ingress sees (its fast SOLD_OUT,
// QUEUE_FULL, THROTTLED, entry-pass and subject-limit refusals, 5xx) and the reserve
// latency. The actors count what they decide (actors.Activity). Atomic
// adds only: no lock and no allocation per request once a SKU has its
// counters.

// ingressCounters are one SKU's reserve answers, cumulative.
type ingressCounters struct {
	// soldOut counts every SOLD_OUT answered, from the fast path, the
	// answer cache and the actor; the sampler subtracts the actor's.
	soldOut   atomic.Uint64
	queueFull atomic.Uint64
	throttled atomic.Uint64
	// entryPass and subjectLimit count refusals whose reason starts with
	// ENTRY_PASS or SUBJECT_LIMIT (the entry-pass issue's reasons; zero
	// until they exist).
	entryPass, subjectLimit atomic.Uint64
	// serverErrors counts 5xx answers (UNAVAILABLE, RESULT_UNKNOWN,
	// INTERNAL, ...). PAUSED is a 503 too, but the operator's doing: not
	// counted.
	serverErrors atomic.Uint64
	// answers counts every reserve answer, latency their durations from
	// routing to the answer being set.
	answers atomic.Uint64
	latency actors.Histogram
}

// Reason prefixes of the refusals counted apart (see ingressCounters).
const (
	reasonPrefixEntryPass    = "ENTRY_PASS"
	reasonPrefixSubjectLimit = "SUBJECT_LIMIT"
)

// count records one answer.
func (c *ingressCounters) count(outcome string, status int, took time.Duration) {
	c.answers.Add(1)
	c.latency.Observe(took)
	switch {
	case outcome == reasonSoldOut:
		c.soldOut.Add(1)
	case outcome == reasonQueueFull:
		c.queueFull.Add(1)
	case outcome == reasonThrottled:
		c.throttled.Add(1)
	case strings.HasPrefix(outcome, reasonPrefixEntryPass):
		c.entryPass.Add(1)
	case strings.HasPrefix(outcome, reasonPrefixSubjectLimit):
		c.subjectLimit.Add(1)
	case status >= 500 && outcome != reasonPaused:
		c.serverErrors.Add(1)
	}
}

// ingressStats maps a SKU to its counters. Counters are made only for SKUs
// the engine knows, so the map is bounded by the configured SKUs.
type ingressStats struct {
	m      sync.Map // gateKey -> *ingressCounters
	engine StatsReader
}

// of returns the counters of a SKU the engine knows, making them on first
// use; nil for any other.
func (is *ingressStats) of(campaignID, skuID string) *ingressCounters {
	key := gateKey{campaignID, skuID}
	if c, ok := is.m.Load(key); ok {
		return c.(*ingressCounters)
	}
	if _, known := is.engine.SKUStats(campaignID, skuID); !known {
		return nil
	}
	c, _ := is.m.LoadOrStore(key, new(ingressCounters))
	return c.(*ingressCounters)
}

// load returns the counters of a SKU, nil when it has none yet.
func (is *ingressStats) load(campaignID, skuID string) *ingressCounters {
	c, ok := is.m.Load(gateKey{campaignID, skuID})
	if !ok {
		return nil
	}
	return c.(*ingressCounters)
}

// timedReserve serves a reserve of k (handleReserve: valid tells whether
// the path's ids are valid) and counts it, timed once: the route's metrics
// m and the SKU's ingress counters (k's, or looked up).
func (s *Server) timedReserve(ctx *fasthttp.RequestCtx, m *routeMetrics, k *reserveTarget, valid bool) {
	start := time.Now()
	outcome := s.handleReserve(ctx, k, valid, start)
	took := m.done(start, outcome)
	counters := k.counters
	if counters == nil && valid {
		counters = s.ingress.of(k.campaignID, k.skuID)
	}
	if counters != nil {
		counters.count(outcome, ctx.Response.StatusCode(), took)
	}
}
