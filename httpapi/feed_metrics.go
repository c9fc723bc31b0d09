package httpapi

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// feedGauges count the feed's open streams and waiting readers: what idle
// consumers hold (a goroutine and a connection each, no timer but a
// stream's heartbeat), and what a vanished client still holds until its
// stream ends.
type feedGauges struct {
	streams atomic.Int64 // SSE streams open
	waiting atomic.Int64 // long polls and streams waiting for a durable record
}

// register exports the gauges as seckill_feed_streams and
// seckill_feed_waiting.
func (g *feedGauges) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "seckill_feed_streams",
			Help: "Server-Sent Events streams of the event feed open now.",
		}, func() float64 { return float64(g.streams.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "seckill_feed_waiting",
			Help: "Event feed readers (long polls and streams) waiting for a durable record now.",
		}, func() float64 { return float64(g.waiting.Load()) }),
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
