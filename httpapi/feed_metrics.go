package httpapi

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// feedMetrics count the feed's open streams and waiting readers (what
// idle consumers hold: a goroutine and a connection each, no timer but a
// stream's heartbeat or a long poll's wait, and what a vanished client
// still holds until its stream ends) and why waiting readers woke (what
// idle consumers cost: a long poll with nothing to read wakes once, at
// its wait; a stream once a heartbeat).
type feedMetrics struct {
	streams atomic.Int64 // SSE streams open
	waiting atomic.Int64 // long polls and streams waiting for a durable record
	wakeups [wakeCauses]atomic.Int64
}

// wakeCause is why a waiting feed reader woke.
type wakeCause int

const (
	wokeByRecord     wakeCause = iota // a group commit of a SKU it reads
	wokeByDefinition                  // a SKU added to the campaign it reads
	wokeByDeadline                    // its wait ended: a long poll's wait=, a stream's heartbeat
	wokeByShutdown
	wakeCauses
)

var wakeCauseNames = [wakeCauses]string{"record", "definition", "deadline", "shutdown"}

// woke counts a waiting reader's wake-up.
func (m *feedMetrics) woke(c wakeCause) { m.wakeups[c].Add(1) }

// register exports the gauges as seckill_feed_streams and
// seckill_feed_waiting, the wake-ups as seckill_feed_wakeups_total{cause}.
func (m *feedMetrics) register(reg prometheus.Registerer) error {
	cs := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "seckill_feed_streams",
			Help: "Server-Sent Events streams of the event feed open now.",
		}, func() float64 { return float64(m.streams.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "seckill_feed_waiting",
			Help: "Event feed readers (long polls and streams) waiting for a durable record now.",
		}, func() float64 { return float64(m.waiting.Load()) }),
	}
	for c := range wakeCauses {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "seckill_feed_wakeups_total",
			Help:        "Wake-ups of waiting event feed readers, by cause: record (a group commit of a SKU read), definition (a SKU added to a campaign read), deadline (a long poll's wait or a stream's heartbeat), shutdown.",
			ConstLabels: prometheus.Labels{"cause": wakeCauseNames[c]},
		}, func() float64 { return float64(m.wakeups[c].Load()) }))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
