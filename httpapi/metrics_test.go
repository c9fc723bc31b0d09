package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

// /metrics exports the request, ingress and per-SKU series (and the
// engine's own), with SKU labels only for defined SKUs and no user or
// request ids anywhere.
func TestMetrics(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	ts.define(campaign("met", "15m", map[string]int{"s": 1}))
	id := ts.reserve("met", "s", "request-secret-1", "user-secret-42").str("reservation_id")
	ts.reserve("met", "s", "request-secret-2", "user-secret-43")      // SOLD_OUT, fast path
	ts.reserve("ghost", "s", "request-secret-3", "user-secret-44")    // unknown SKU
	ts.post("/v1/reservations/"+id+"/payment", `{"payment_id":"p1"}`) // PAID
	ts.post("/v1/reservations/"+id+"/payment", `{"payment_id":"p2"}`) // PAYMENT_CONFLICT

	refunds := ts.admin(http.MethodGet, "/admin/campaigns/met/skus/s/refunds", nil)
	if !strings.Contains(string(refunds.raw), `"payment_id":"p2"`) || strings.Contains(string(refunds.raw), `"payment_id":"p1"`) {
		t.Fatalf("the conflicting payment is not listed for refund (or the paying one is): %s", refunds.raw)
	}

	m := ts.get("/metrics")
	if m.status != http.StatusOK {
		t.Fatalf("/metrics: %d", m.status)
	}
	text := string(m.raw)
	for _, want := range []string{
		`seckill_http_requests_total{outcome="ACCEPTED",route="reserve"} 1`,
		`seckill_http_requests_total{outcome="SOLD_OUT",route="reserve"} 1`,
		`seckill_http_requests_total{outcome="PAYMENT_CONFLICT",route="pay"} 1`,
		`seckill_http_request_duration_seconds_bucket{route="reserve"`,
		`seckill_ingress_rejections_total{layer="sold_out"} 1`,
		`seckill_ingress_rejections_total{layer="validation"} 1`,
		`seckill_admissions_total{campaign_id="met",sku_id="s"} 1`,
		`seckill_sku_mailbox_messages{campaign_id="met",sku_id="s"} 0`,
		`seckill_sku_oldest_message_age_seconds{campaign_id="met",sku_id="s"} 0`,
		`seckill_sku_consumer_rate_messages_per_second{campaign_id="met",sku_id="s"}`,
		`seckill_sku_reservations{campaign_id="met",sku_id="s",state="PAID"} 1`,
		`seckill_sku_tokens{campaign_id="met",sku_id="s",state="CONFIRMED"} 1`,
		`seckill_sku_tokens{campaign_id="met",sku_id="s",state="AVAILABLE"} 0`,
		`# TYPE seckill_sku_durable_rejections_total counter`,
		`seckill_sku_refunds_required{campaign_id="met",sku_id="s"} 1`, // p2, the conflicting payment
		`seckill_sku_admission_permits_in_flight{campaign_id="met",sku_id="s"} 0`,
		`seckill_wal_fsync_seconds_bucket`,
		`seckill_actor_processing_seconds_bucket`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %s", want)
		}
	}
	for _, leak := range []string{"secret", "ghost", id} {
		if strings.Contains(text, leak) {
			t.Errorf("/metrics mentions %q:\n%s", leak, grepLines(text, leak))
		}
	}
}

// Counter series a client needs for rate() and increase() exist before
// their first increment: the known outcomes of each route and the ingress
// layers from the start, each SKU's admissions from its definition. The
// exposition passes promlint (the checks of promtool check metrics), in
// the text format and in OpenMetrics when asked.
func TestMetricsSeriesExistBeforeUse(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	ts.define(campaign("pre", "15m", map[string]int{"a": 1, "b": 2}))
	text := string(ts.get("/metrics").raw)
	for _, want := range []string{
		`seckill_http_requests_total{outcome="QUEUE_FULL",route="reserve"} 0`,
		`seckill_http_requests_total{outcome="ACCEPTED",route="reserve"} 0`,
		`seckill_http_requests_total{outcome="SOLD_OUT",route="reserve"} 0`,
		`seckill_http_requests_total{outcome="PAID",route="pay"} 0`,
		`seckill_http_requests_total{outcome="INTERNAL",route="admin_audit"} 0`,
		`seckill_ingress_rejections_total{layer="queue_full"} 0`,
		`seckill_admissions_total{campaign_id="pre",sku_id="a"} 0`,
		`seckill_admissions_total{campaign_id="pre",sku_id="b"} 0`,
		`seckill_sku_durable_rejections_total{campaign_id="pre",sku_id="a"} 0`,
		`seckill_http_request_duration_seconds_bucket{route="reserve",le="1e-05"} 0`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %s", want)
		}
	}
	problems, err := promlint.New(strings.NewReader(text)).Lint()
	if err != nil {
		t.Fatalf("promlint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}

	r := call(t, http.MethodGet, ts.base+"/metrics", nil, map[string]string{"Accept": "application/openmetrics-text;version=1.0.0"})
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Fatalf("/metrics asked for OpenMetrics: Content-Type %q", ct)
	}
	if !strings.HasSuffix(string(r.raw), "# EOF\n") {
		t.Fatalf("OpenMetrics exposition does not end with # EOF")
	}
}
