package orders

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill/client"
)

// Run consumes src into store until ctx ends (it returns nil: a clean
// stop, the batch in flight committed or rolled back whole) or src refuses
// the position (an error wrapping ErrPosition). Any other failure (the
// source or PostgreSQL unreachable) is logged and retried, from the cursor
// saved in PostgreSQL, after a doubling pause up to 10 s.
func Run(ctx context.Context, src Source, store *Store, m *Metrics, log *slog.Logger) error {
	consumer := src.Name()
	cursor, err := store.Cursor(ctx, consumer)
	for pause := 100 * time.Millisecond; ; {
		if err == nil {
			log.Info("orders: consuming", "consumer", consumer, "cursor", cursor)
			cursor, err = consume(ctx, src, store, m, log, consumer, cursor)
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, ErrPosition):
			return err
		}
		m.errors.Inc()
		log.Warn("orders: retrying from the saved cursor", "consumer", consumer, "err", err, "after", pause)
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return nil
		}
		pause = min(2*pause, 10*time.Second)
		cursor, err = store.Cursor(ctx, consumer)
	}
}

// consume applies batch after batch until an error; it returns the
// cursor saved last.
func consume(ctx context.Context, src Source, store *Store, m *Metrics, log *slog.Logger, consumer, cursor string) (string, error) {
	if c, ok := src.(checker); ok {
		if err := c.Check(ctx, store, cursor); err != nil {
			return cursor, err
		}
	}
	waiting := false // for a campaign not defined yet, logged once
	for {
		events, next, err := src.Next(ctx, cursor)
		if c, ok := err.(*Compacted); ok {
			r, ok := src.(resyncer)
			if !ok {
				return cursor, fmt.Errorf("%w: %v", ErrPosition, c)
			}
			log.Warn("orders: resynchronising a SKU from the export", "sku", c.SKUID, "why", c.Reason)
			if cursor, err = r.Resync(ctx, store, consumer, cursor, c.SKUID); err != nil {
				return cursor, err
			}
			m.resyncs.Inc()
			continue
		}
		if errors.Is(err, ErrNotDefined) {
			if !waiting {
				log.Warn("orders: the campaign is not defined (the feed's 404, or no relay stream yet): waiting for it", "consumer", consumer, "err", err)
				waiting = true
			}
			select {
			case <-time.After(100 * time.Millisecond): // its first events then wait no longer
			case <-ctx.Done():
				return cursor, ctx.Err()
			}
			continue
		}
		if err != nil {
			return cursor, err
		}
		if next == cursor && len(events) == 0 {
			continue
		}
		// A stop signal lets the batch in hand commit (or roll back) whole,
		// within a bound, rather than cut it off mid-way.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		start := time.Now()
		done, err := store.Apply(actx, consumer, events, next)
		cancel()
		if err != nil {
			return cursor, err
		}
		m.observe(events, done, time.Since(start))
		cursor = next
		if ctx.Err() != nil {
			return cursor, ctx.Err()
		}
	}
}

// checker is a source that checks, before it goes on from a saved
// cursor, that the events applied up to it are still the source's
// (FeedSource.Check).
type checker interface {
	Check(ctx context.Context, store *Store, cursor string) error
}

// resyncer is a source that can resynchronise a SKU whose events it no
// longer holds (FeedSource).
type resyncer interface {
	Resync(ctx context.Context, store *Store, consumer, cursor, skuID string) (string, error)
}

// Metrics are the order service's Prometheus metrics.
type Metrics struct {
	events      *prometheus.CounterVec
	duplicates  prometheus.Counter
	batches     prometheus.Histogram
	lag         prometheus.Histogram
	lastEventAt prometheus.Gauge
	errors      prometheus.Counter
	resyncs     prometheus.Counter
}

// NewMetrics registers the metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "seckill_orders_events_applied_total",
			Help: "Events applied for the first time, by type."}, []string{"type"}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{Name: "seckill_orders_events_duplicate_total",
			Help: "Events delivered again and skipped (their (source, id) was applied before)."}),
		batches: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "seckill_orders_batch_seconds",
			Help: "Time to apply one batch and commit it with its cursor.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "seckill_orders_lag_seconds",
			Help: "From an event's decision in seckill to its commit here.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
		lastEventAt: prometheus.NewGauge(prometheus.GaugeOpts{Name: "seckill_orders_last_event_timestamp_seconds",
			Help: "The decision time of the last event committed."}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "seckill_orders_errors_total",
			Help: "Failures of the source or of PostgreSQL, each followed by a retry from the saved cursor."}),
		resyncs: prometheus.NewCounter(prometheus.CounterOpts{Name: "seckill_orders_resyncs_total",
			Help: "SKUs resynchronised from seckill's export because the feed no longer held events this consumer needed."}),
	}
	reg.MustRegister(m.events, m.duplicates, m.batches, m.lag, m.lastEventAt, m.errors, m.resyncs)
	return m
}

func (m *Metrics) observe(events []client.Event, done Applied, took time.Duration) {
	m.batches.Observe(took.Seconds())
	for i, e := range events {
		if !done.Fresh[i] {
			m.duplicates.Inc()
			continue
		}
		m.events.WithLabelValues(e.Type).Inc()
		m.lag.Observe(done.Committed.Sub(e.Time).Seconds())
	}
	if n := len(events); n > 0 {
		m.lastEventAt.Set(float64(events[n-1].Time.UnixMilli()) / 1000)
	}
}
