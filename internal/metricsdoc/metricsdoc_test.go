package metricsdoc_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckill/seckill/internal/metricsdoc"
)

// A row per family, sorted, skipped prefixes left out; values listed for
// closed labels only; a "|" in a help text escaped.
func TestTable(t *testing.T) {
	reg := prometheus.NewRegistry()
	layers := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_rejections_total", Help: "by layer"}, []string{"layer"})
	layers.WithLabelValues("queue_full")
	layers.WithLabelValues("dedup")
	skus := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "a_tokens", Help: "a|b"}, []string{"sku_id", "state"})
	skus.WithLabelValues("s1", "RESERVED")
	skus.WithLabelValues("s2", "AVAILABLE")
	reg.MustRegister(layers, skus, prometheus.NewCounter(prometheus.CounterOpts{Name: "go_skipped_total", Help: "no"}))
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := "| metric | type | labels | help |\n|---|---|---|---|\n" +
		"| `a_tokens` | gauge | `sku_id`, `state` (AVAILABLE, RESERVED) | a\\|b |\n" +
		"| `x_rejections_total` | counter | `layer` (dedup, queue_full) | by layer |\n"
	if got := metricsdoc.Table(families, "go_"); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
