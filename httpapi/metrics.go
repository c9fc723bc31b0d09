package httpapi

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Ingress layers that can answer a reserve before the actor (the
// seckill_ingress_rejections_total "layer" label).
const (
	layerValidation = "validation"     // malformed body or ids
	layerDedup      = "dedup"          // answered from a flight or the answer cache
	layerWindow     = "window"         // NOT_STARTED / ENDED on the server's clock
	layerPaused     = "paused"         // PAUSED / UNAVAILABLE published by the SKU
	layerSoldOut    = "sold_out_cache" // durable available = 0, or permits cover the stock
	layerQueueFull  = "queue_full"     // permits or queue age exhausted
	layerEntryPass  = "entry_pass"     // refused by the entry-pass check (seckill_entry_pass_rejections_total says why)
)

// metrics are the service's own series. Label values are bounded: routes
// and reasons are fixed sets, SKU labels are only made for SKUs the engine
// knows, and no user or request id is ever a label.
type metrics struct {
	requests   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	rejections *prometheus.CounterVec
	admissions *prometheus.CounterVec
	// rejectedBy caches the children of rejections, one per layer; it is
	// read-only after newMetrics.
	rejectedBy map[string]prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_http_requests_total",
			Help: "HTTP requests by route and outcome (the error reason or the resulting state).",
		}, []string{"route", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:                            "seckill_http_request_duration_seconds",
			Help:                            "Time from routing to the answer being set, by route.",
			Buckets:                         []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  160,
			NativeHistogramMinResetDuration: 0,
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
	m.rejectedBy = make(map[string]prometheus.Counter)
	for _, layer := range []string{layerValidation, layerDedup, layerWindow, layerPaused, layerSoldOut, layerQueueFull, layerEntryPass} {
		m.rejectedBy[layer] = m.rejections.WithLabelValues(layer) // also exports zeros
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.rejections, m.admissions} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
