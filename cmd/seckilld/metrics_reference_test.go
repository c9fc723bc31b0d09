package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckill/seckill/cells"
	"github.com/seckill/seckill/internal/metricsdoc"
	"github.com/seckill/seckill/ledger"
)

// docs/reference/metrics-cell.md is what a cell registers beside a
// seckilld's metrics (registerAgentMetrics, for each celled SKU); docs'
// TestDocsReference covers the rest. SECKILL_UPDATE_DOCS=1 (make docs)
// writes it instead of comparing.
func TestDocsCellMetricsReference(t *testing.T) {
	reg := prometheus.NewRegistry()
	registerAgentMetrics(reg, ledger.SKU{Campaign: "demo", SKU: "sku-1"}, "c1", &cells.Agent{})
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.WriteString(`# Metrics of a cell

What ` + "`seckilld --cell`" + ` serves on ` + "`GET /metrics`" + ` beside [every seckilld's](metrics.md):
one series of each per celled SKU, labelled with the SKU and the cell. Generated from the code by
` + "`make docs`" + ` (do not edit; ` + "`TestDocsCellMetricsReference`" + ` fails when it is not current).
See [cells.md](../cells.md#the-agent).

`)
	b.WriteString(metricsdoc.Table(families))
	checkReference(t, "metrics-cell.md", b.Bytes())
}

// checkReference compares docs/reference/<name> with what the code
// prints now (want), or writes it with SECKILL_UPDATE_DOCS=1 (make docs).
func checkReference(t *testing.T, name string, now []byte) {
	t.Helper()
	path := filepath.Join("..", "..", "docs", "reference", name)
	if os.Getenv("SECKILL_UPDATE_DOCS") != "" {
		if err := os.WriteFile(path, now, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (make docs writes it)", err)
	}
	if !bytes.Equal(file, now) {
		t.Errorf("docs/reference/%s is not current: run make docs and commit it\nfile:\n%s\ncode:\n%s", name, file, now)
	}
}
