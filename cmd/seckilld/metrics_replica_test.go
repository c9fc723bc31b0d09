package main

import (
	"bytes"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckill/seckill/internal/metricsdoc"
)

// docs/reference/metrics-replica.md is what a member of a replica set
// registers of its own (haCollector) beside a seckilld's and the
// replication stream's metrics. SECKILL_UPDATE_DOCS=1 (make docs) writes
// it instead of comparing.
func TestDocsReplicaMetricsReference(t *testing.T) {
	n := &haNode{}
	n.state.Store(&haState{Set: "rs1", Name: "a", Role: "primary", Epoch: 1, Sync: []string{"b"}})
	reg := prometheus.NewRegistry()
	reg.MustRegister(n.collector())
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.WriteString(`# Metrics of a replica

What ` + "`seckilld --replica`" + ` serves on ` + "`GET /metrics`" + ` of its own, in every role, beside
[every seckilld's](metrics.md) (while primary) and the replication stream's. Generated from the code by
` + "`make docs`" + ` (do not edit; ` + "`TestDocsReplicaMetricsReference`" + ` fails when it is not current).
See [ha.md](../ha.md#metrics-of-a-replica).

`)
	b.WriteString(metricsdoc.Table(families))
	checkReference(t, "metrics-replica.md", b.Bytes())
}
