package stream

import "github.com/prometheus/client_golang/prometheus"

// primaryMetrics are a Primary's figures: counters kept here, gauges read
// from Standbys at each scrape.
type primaryMetrics struct {
	p               *Primary
	reg             prometheus.Registerer
	baseCopies      *prometheus.CounterVec
	queueFull       *prometheus.CounterVec
	beyondRetention *prometheus.CounterVec
	refused         prometheus.Counter
	connected       *prometheus.Desc
	lagRecords      *prometheus.Desc
	lagSeconds      *prometheus.Desc
	caughtUp        *prometheus.Desc
}

func newPrimaryMetrics(p *Primary, reg prometheus.Registerer) *primaryMetrics {
	m := &primaryMetrics{
		p:   p,
		reg: reg,
		baseCopies: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "seckill_replica_base_copies_total",
			Help: "SKU base copies (snapshot + log tail) sent to a standby."}, []string{"standby"}),
		queueFull: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "seckill_replica_send_queue_full_total",
			Help: "Times a standby's bounded send queue was full and a SKU's copy went back to catching up from disk."}, []string{"standby"}),
		beyondRetention: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "seckill_replica_standby_beyond_retention_total",
			Help: "SKU logs whose standby fell behind the records kept for it (MaxRetainRecords)."}, []string{"standby"}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Name: "seckill_replica_deposed_refusals_total",
			Help: "Standbys that refused this primary: they had seen a later epoch."}),
		connected: prometheus.NewDesc("seckill_replica_standby_connected",
			"1 while the standby is connected.", []string{"standby"}, nil),
		lagRecords: prometheus.NewDesc("seckill_replica_standby_lag_records",
			"Records shipped and not acknowledged by the standby, over every SKU.", []string{"standby"}, nil),
		lagSeconds: prometheus.NewDesc("seckill_replica_standby_lag_seconds",
			"How long the standby has been behind (0 while caught up).", []string{"standby"}, nil),
		caughtUp: prometheus.NewDesc("seckill_replica_standby_caught_up",
			"1 while the standby holds every committed record of every SKU.", []string{"standby"}, nil),
	}
	if reg != nil {
		reg.MustRegister(m.baseCopies, m.queueFull, m.beyondRetention, m.refused, m)
	}
	return m
}

func (m *primaryMetrics) unregister() {
	if m.reg == nil {
		return
	}
	for _, c := range []prometheus.Collector{m.baseCopies, m.queueFull, m.beyondRetention, m.refused, m} {
		m.reg.Unregister(c)
	}
}

// Describe implements prometheus.Collector.
func (m *primaryMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.connected
	ch <- m.lagRecords
	ch <- m.lagSeconds
	ch <- m.caughtUp
}

// Collect implements prometheus.Collector.
func (m *primaryMetrics) Collect(ch chan<- prometheus.Metric) {
	for _, st := range m.p.Standbys() {
		ch <- prometheus.MustNewConstMetric(m.connected, prometheus.GaugeValue, bit(st.Connected), st.Name)
		ch <- prometheus.MustNewConstMetric(m.lagRecords, prometheus.GaugeValue, float64(st.LagRecords), st.Name)
		ch <- prometheus.MustNewConstMetric(m.lagSeconds, prometheus.GaugeValue, float64(st.LagMillis)/1000, st.Name)
		ch <- prometheus.MustNewConstMetric(m.caughtUp, prometheus.GaugeValue, bit(st.CaughtUp), st.Name)
	}
}

func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// standbyMetrics are a Standby's figures.
type standbyMetrics struct {
	reg      prometheus.Registerer
	records  prometheus.Counter
	cuts     prometheus.Counter
	bases    prometheus.Counter
	refused  prometheus.Counter
	epoch    prometheus.Gauge
	connects prometheus.Counter
}

func newStandbyMetrics(reg prometheus.Registerer) *standbyMetrics {
	m := &standbyMetrics{
		reg: reg,
		records: prometheus.NewCounter(prometheus.CounterOpts{Name: "seckill_replica_copied_records_total",
			Help: "Records this standby appended from its primary."}),
		cuts: prometheus.NewCounter(prometheus.CounterOpts{Name: "seckill_replica_cut_records_total",
			Help: "Records this standby cut at a rejoin: its primary did not hold them (never committed)."}),
		bases: prometheus.NewCounter(prometheus.CounterOpts{Name: "seckill_replica_base_copies_installed_total",
			Help: "SKU base copies (snapshot + log tail) this standby installed."}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Name: "seckill_replica_stale_epoch_refusals_total",
			Help: "Messages this standby refused: of a lower epoch than the highest it has seen."}),
		epoch: prometheus.NewGauge(prometheus.GaugeOpts{Name: "seckill_replica_epoch",
			Help: "The highest epoch this standby has seen."}),
		connects: prometheus.NewCounter(prometheus.CounterOpts{Name: "seckill_replica_connections_total",
			Help: "Connections this standby made to its primary."}),
	}
	if reg != nil {
		reg.MustRegister(m.all()...)
	}
	return m
}

func (m *standbyMetrics) all() []prometheus.Collector {
	return []prometheus.Collector{m.records, m.cuts, m.bases, m.refused, m.epoch, m.connects}
}

func (m *standbyMetrics) unregister() {
	if m.reg == nil {
		return
	}
	for _, c := range m.all() {
		m.reg.Unregister(c)
	}
}
