package httpapi

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/promhist"
)

// ingressLayer is an ingress layer that can answer a reserve before the
// actor; layerNames gives its seckill_ingress_rejections_total "layer"
// label. An index, not the label: counting a rejection costs no map lookup.
type ingressLayer uint8

const (
	layerValidation ingressLayer = iota // malformed body or ids
	layerDedup                          // answered from a flight or the answer cache
	layerWindow                         // NOT_STARTED / ENDED on the server's clock
	layerPaused                         // PAUSED / UNAVAILABLE published by the SKU
	layerSoldOut                        // SOLD_OUT: durable available = 0, or permits in flight cover the stock
	layerQueueFull                      // permits or inbox age exhausted
	layerThrottled                      // commits too slow for max_queue_wait, or the ramp after them
	layerEntryPass                      // refused by the entry-pass check (seckill_entry_pass_rejections_total says why)
	numLayers
)

var layerNames = [numLayers]string{
	layerValidation: "validation",
	layerDedup:      "dedup",
	layerWindow:     "window",
	layerPaused:     "paused",
	layerSoldOut:    "sold_out",
	layerQueueFull:  "queue_full",
	layerThrottled:  "throttled",
	layerEntryPass:  "entry_pass",
}

// httpBuckets are the bounds of seckill_http_request_duration_seconds,
// from measured answers: the ingress's fast paths (SOLD_OUT, dedup,
// validation) answer in 10-40 µs of server time, so the first buckets are
// 10 and 25 µs (at 100 µs, as before, every fast answer fell into the
// first bucket and its p99 read 99 µs by interpolation); a durable reserve
// waits for a group commit, 0.15-0.5 ms alone and 4-40 ms at 4,096
// connections (make bench-engine, docs/benchmarks.md), hence 1-2-5 steps up to 100 ms;
// the tail reaches the request timeout (3 s by default) and a define's
// fsyncs, so the last bound is 5 s.
var httpBuckets = []float64{1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}

// metrics are the service's own series. Label values are bounded: routes
// and reasons are fixed sets, SKU labels are only made for SKUs the engine
// knows, and no user or request id is ever a label.
type metrics struct {
	requests   *prometheus.CounterVec
	duration   *promhist.Vec
	rejections *prometheus.CounterVec
	admissions *prometheus.CounterVec
	// rejectedBy caches the children of rejections, one per layer; it is
	// read-only after newMetrics.
	rejectedBy [numLayers]prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_http_requests_total",
			Help: "HTTP requests by route and outcome (the error reason or the resulting state).",
		}, []string{"route", "outcome"}),
		duration: promhist.NewVec(prometheus.HistogramOpts{
			Name:    "seckill_http_request_duration_seconds",
			Help:    "Time from routing to the answer being set, by route.",
			Buckets: httpBuckets,
		}, []string{"route"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_ingress_rejections_total",
			Help: "Reserves answered by an ingress layer without reaching the SKU actor, by layer.",
		}, []string{"layer"}),
		admissions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_admissions_total",
			Help: "Reserves admitted to a SKU actor (permits granted).",
		}, []string{"campaign_id", "sku_id"}),
	}
	// Series made at start: a counter that first appears at its first
	// increment loses that increment to rate() and increase().
	for layer, name := range layerNames {
		m.rejectedBy[layer] = m.rejections.WithLabelValues(name) // also exports zeros
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.rejections, m.admissions} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// routeOutcomes are the outcomes whose request series each route has from
// its start (route): the answers of the reservation flow, and for every
// route the server's own failures. Outcomes not listed get their series
// at first use.
var routeOutcomes = map[string][]string{
	"reserve": {sku.OutcomeAccepted.String(), sku.OutcomeSoldOut.String(), sku.OutcomeAlreadyPurchased.String(),
		sku.OutcomeRequestIDReused.String(), reasonNotStarted, reasonEnded, reasonPaused, reasonQueueFull, reasonThrottled,
		reasonBadRequest, reasonInvalidJSON, reasonNotFound, ReasonResultUnknown},
	"pay": {sku.StatePaid.String(), sku.OutcomePaymentConflict.String(),
		sku.OutcomeRefundRequired.String(), reasonUnauthorized, reasonBadRequest, reasonInvalidJSON, reasonNotFound, reasonQueueFull, ReasonResultUnknown},
	"cancel":          {sku.StateClosed.String(), sku.OutcomeNotClosable.String(), reasonNotFound, reasonQueueFull, ReasonResultUnknown},
	"get_reservation": {sku.StatePendingPayment.String(), sku.StatePaid.String(), sku.StateClosed.String(), reasonNotFound, reasonQueueFull, reasonReadTimeout},
	"lookup_request":  {sku.OutcomeAccepted.String(), sku.OutcomeSoldOut.String(), reasonNotFound, reasonQueueFull, reasonReadTimeout},
	"sku_status":      {reasonNotFound},
}

// knownOutcomes returns the outcomes whose series route name has from the
// start: its own (routeOutcomes) and the failures any route may answer.
func knownOutcomes(name string) []string {
	return append(append([]string(nil), routeOutcomes[name]...), ReasonUnavailable, reasonInternal)
}
