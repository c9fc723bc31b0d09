package httpapi

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill/feed"
)

// registerFeedGauges exports what idle feed consumers hold (a goroutine
// and a connection each, no timer but a stream's heartbeat), and what a
// vanished client still holds until its stream ends: the SSE streams open
// (seckill_feed_streams) and the readers waiting for a durable record
// (seckill_feed_waiting, the feed's count; 0 without a feed); and what
// they cost: why waiting readers woke (seckill_feed_wakeups_total{cause}).
func (s *Server) registerFeedGauges(reg prometheus.Registerer) error {
	cs := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "seckill_feed_streams",
			Help: "Server-Sent Events streams of the event feed open now.",
		}, func() float64 { return float64(s.feedStreams.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "seckill_feed_waiting",
			Help: "Event feed readers (long polls and streams) waiting for a durable record now.",
		}, func() float64 {
			if s.feed == nil {
				return 0
			}
			return float64(s.feed.Waiting())
		}),
	}
	for c := range feed.WakeCauses {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "seckill_feed_wakeups_total",
			Help:        "Wake-ups of waiting event feed readers, by cause: record (a group commit of a SKU read), definition (a SKU added to a campaign read), deadline (a long poll's wait or a stream's heartbeat), shutdown.",
			ConstLabels: prometheus.Labels{"cause": c.String()},
		}, func() float64 {
			if s.feed == nil {
				return 0
			}
			return float64(s.feed.Wakeups(c))
		}))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
