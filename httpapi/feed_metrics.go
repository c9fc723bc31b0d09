package httpapi

import (
	"github.com/prometheus/client_golang/prometheus"
)

// registerFeedGauges exports what idle feed consumers hold (a goroutine
// and a connection each, no timer but a stream's heartbeat), and what a
// vanished client still holds until its stream ends: the SSE streams open
// (seckill_feed_streams) and the readers waiting for a durable record
// (seckill_feed_waiting, the feed's count; 0 without a feed).
func (s *Server) registerFeedGauges(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{
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
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
