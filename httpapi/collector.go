package httpapi

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckill/seckill/actors/sku"
)

// skuCollector exports per-SKU gauges read from the engine's published
// stats at scrape time: no bookkeeping on the request path, and a SKU's
// series exist exactly while the engine knows it.
type skuCollector struct {
	engine StatsReader
	gates  *gates
	limits limits

	mailbox, oldestAge, rate, saleLimit, tokens, reservations *prometheus.Desc
	refunds, rejected, paused, unavailable, inFlight          *prometheus.Desc
	commitWait, commitLatency, expectedWait, permits          *prometheus.Desc
}

func newSKUCollector(e StatsReader, g *gates, l limits) *skuCollector {
	labels := []string{"campaign_id", "sku_id"}
	desc := func(name, help string, extra ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, append(append([]string(nil), labels...), extra...), nil)
	}
	return &skuCollector{
		engine:       e,
		gates:        g,
		limits:       l,
		mailbox:      desc("seckill_sku_mailbox_messages", "Calls waiting for the SKU actor (its inbox: one mailbox message per burst)."),
		oldestAge:    desc("seckill_sku_oldest_message_age_seconds", "Age of the oldest call waiting for the SKU actor."),
		rate:         desc("seckill_sku_consumer_rate_messages_per_second", "Recent processing rate of the SKU actor (the admission consumer_rate)."),
		saleLimit:    desc("seckill_sku_sale_limit_tokens", "The SKU's sale_limit."),
		tokens:       desc("seckill_sku_tokens", "Tokens by state (AVAILABLE, RESERVED, CONFIRMED), as of the last durable record.", "state"),
		reservations: desc("seckill_sku_reservations", "Reservations by state, as of the last durable record.", "state"),
		refunds:      desc("seckill_sku_refunds_required", "Payments received after close that must be refunded (REFUND_REQUIRED)."),
		rejected:     desc("seckill_sku_durable_rejections_total", "Reserves durably rejected (SOLD_OUT decided by the actor)."),
		paused:       desc("seckill_sku_paused", "1 while admission is paused."),
		unavailable:  desc("seckill_sku_unavailable", "1 while the SKU is not recovered or its log failed."),
		inFlight:     desc("seckill_sku_admission_permits_in_flight", "Reserves admitted to the SKU actor and not yet answered."),
		commitWait:   desc("seckill_sku_commit_wait_seconds", "Age of the oldest call waiting for its records to be durable (the SKU log's oldest waiter)."),
		commitLatency: desc("seckill_sku_commit_latency_seconds",
			"How long the calls released by the SKU log's last group commit waited for it."),
		expectedWait: desc("seckill_sku_admission_expected_wait_seconds",
			"The wait admission judges a reserve admitted now would see: oldest message age + max(commit wait, commit latency); it admits nothing from max_queue_wait on."),
		permits: desc("seckill_sku_admission_permits", "Reserves admission lets be in flight to the SKU now: the bound while OPEN, less (or 0) while THROTTLED."),
	}
}

// Describe implements prometheus.Collector.
func (c *skuCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.mailbox, c.oldestAge, c.rate, c.saleLimit, c.tokens,
		c.reservations, c.refunds, c.rejected, c.paused, c.unavailable, c.inFlight,
		c.commitWait, c.commitLatency, c.expectedWait, c.permits} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *skuCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	flag := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	for _, st := range c.engine.AllStats() {
		cs, ss := st.CampaignID, st.SKUID
		n := st.Counts
		gauge(c.mailbox, float64(st.Queued), cs, ss)
		gauge(c.oldestAge, st.OldestWait.Seconds(), cs, ss)
		gauge(c.rate, st.RatePerSecond, cs, ss)
		gauge(c.saleLimit, float64(n.SaleLimit), cs, ss)
		gauge(c.tokens, float64(n.Available), cs, ss, sku.TokenAvailable.String())
		gauge(c.tokens, float64(n.Reserved), cs, ss, sku.TokenReserved.String())
		gauge(c.tokens, float64(n.Confirmed), cs, ss, sku.TokenConfirmed.String())
		gauge(c.reservations, float64(n.PendingPayment), cs, ss, sku.StatePendingPayment.String())
		gauge(c.reservations, float64(n.Paid), cs, ss, sku.StatePaid.String())
		gauge(c.reservations, float64(n.Closed), cs, ss, sku.StateClosed.String())
		gauge(c.refunds, float64(n.RefundsRequired), cs, ss)
		ch <- prometheus.MustNewConstMetric(c.rejected, prometheus.CounterValue, float64(n.Rejected), cs, ss)
		gauge(c.paused, flag(st.Paused), cs, ss)
		gauge(c.unavailable, flag(st.Unavailable), cs, ss)
		g := c.gates.get(cs, ss)
		d := c.limits.decide(&st, g)
		gauge(c.inFlight, float64(g.inFlight.Load()), cs, ss)
		gauge(c.commitWait, st.CommitWait.Seconds(), cs, ss)
		gauge(c.commitLatency, st.CommitLatency.Seconds(), cs, ss)
		gauge(c.expectedWait, d.Wait.Seconds(), cs, ss)
		gauge(c.permits, float64(d.Permits), cs, ss)
	}
}
