package actors

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/internal/promhist"
)

// engineMetrics are the engine's own Prometheus metrics. SKU-level gauges
// (counts, mailbox) are read from SKU.Stats by the HTTP layer at scrape
// time; these are the ones only the engine can observe.
type engineMetrics struct {
	// The histograms observed on every call and group commit are
	// promhist's, the cheaper to observe.
	processing [core.KindCount]*promhist.Histogram
	expiries   prometheus.Counter
	fsync      *promhist.Histogram
	batch      *promhist.Histogram

	snapshotPause    prometheus.Observer
	snapshotSeconds  prometheus.Observer
	snapshotBytes    prometheus.Observer
	snapshotFailures prometheus.Counter
}

func newEngineMetrics(reg prometheus.Registerer) *engineMetrics {
	processing := promhist.NewVec(prometheus.HistogramOpts{
		Name: "seckill_actor_processing_seconds",
		Help: "Time a SKU actor spends deciding one call (not waiting for the log).",
		// A reserve, pay or close decides in ~1 µs (BenchmarkMachineReserve),
		// a definition or a freeze in tens of µs, reads of a whole SKU
		// (its hash, refunds) in O(reservations): ~0.1 s per million, so
		// seconds at tens of millions. 1-2-5 steps from 1 µs to 10 s.
		Buckets: []float64{1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 1e-2, 0.1, 1, 10},
	}, []string{"command"})
	m := &engineMetrics{
		expiries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seckill_expiries_total",
			Help: "Reservations closed by the expiry timer because expire_at passed.",
		}),
	}
	fsync := promhist.New(prometheus.HistogramOpts{
		Name: "seckill_wal_fsync_seconds",
		Help: "Duration of one WAL group-commit fsync.",
		// fdatasync of a small append measured 0.14-0.5 ms at p50 on the
		// reference disk, with a tail of tens of ms under load.
		Buckets: []float64{5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 0.1, 0.5, 1},
	})
	batch := promhist.New(prometheus.HistogramOpts{
		Name: "seckill_wal_batch_records",
		Help: "Records written by one WAL group commit (one write, one fsync).",
		// Every batch holds at least one record. The empty bucket at 0.99
		// gives the bucket of single-record batches a lower edge, so
		// histogram_quantile reads ~1 for them, not 0.56 (it interpolates
		// from 0 within the first bucket). Then powers of two up to the
		// 240-480 records per fsync measured at 4,096 connections, and
		// beyond to 4,096.
		Buckets: append([]float64{0.99}, prometheus.ExponentialBuckets(1, 2, 13)...),
	})
	m.fsync, m.batch = fsync, batch
	snapshotPause := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "seckill_snapshot_pause_seconds",
		Help:    "Time a SKU actor spends freezing its state for a snapshot (the pause requests see).",
		Buckets: []float64{1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.05, 0.1, 1},
	})
	snapshotSeconds := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "seckill_snapshot_seconds",
		Help:    "Time from a snapshot's freeze until its file is durable.",
		Buckets: []float64{1e-3, 1e-2, 0.05, 0.1, 0.5, 1, 5, 30},
	})
	snapshotBytes := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "seckill_snapshot_bytes",
		Help:    "Size of each snapshot file written.",
		Buckets: prometheus.ExponentialBuckets(1<<10, 8, 8),
	})
	m.snapshotFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "seckill_snapshot_failures_total",
		Help: "Snapshots that failed to be written (the SKU retries later).",
	})
	m.snapshotPause, m.snapshotSeconds, m.snapshotBytes = snapshotPause, snapshotSeconds, snapshotBytes
	for k := core.KindReserve; k < core.KindCount; k++ {
		m.processing[k] = processing.WithLabelValues(k.String())
	}
	if reg != nil {
		reg.MustRegister(processing, m.expiries, fsync, batch,
			snapshotPause, snapshotSeconds, snapshotBytes, m.snapshotFailures)
	}
	return m
}

// Committed implements wal.Observer.
func (m *engineMetrics) Committed(records int, fsync time.Duration) {
	m.batch.Observe(float64(records))
	if fsync > 0 {
		m.fsync.Observe(fsync.Seconds())
	}
}

func (m *engineMetrics) observeSnapshot(info SnapshotInfo, err error) {
	if err != nil {
		m.snapshotFailures.Inc()
		return
	}
	m.snapshotPause.Observe(info.Pause.Seconds())
	m.snapshotSeconds.Observe(info.Took.Seconds())
	m.snapshotBytes.Observe(float64(info.Bytes))
}

func (m *engineMetrics) observeCall(k core.Kind, d time.Duration) {
	m.processing[k].Observe(d.Seconds())
}
