package clustertest

import (
	"context"
	"testing"
	"time"

	"github.com/seckill/seckill/bench"
	"github.com/seckill/seckill/cells"
	"github.com/seckill/seckill/ledger"
)

// TestBenchThroughRouter is make cluster's "seckill-bench --target ROUTER"
// in a bounded form: a real etcd, two seckilld cells and a router, all
// started before the tool publishes anything; the seed scenario, unchanged
// but small (1,000 units, 10,000 attempts), run through the router with
// --etcd and --cells, once with single reserves and once with batches
// (the router splits each by cell). It must pass the tool's own checks
// (sold exactly out, no mismatch, the cluster audit ok), and the sale must
// have been celled: both cells sold, and the central pool went out in
// top-ups (the central pool is 10% of the units: 1,000 units leave 100 of
// it, two top-ups of 50; more attempts would prove nothing more and cost
// CPU, most of it in this race-built test process's client).
func TestBenchThroughRouter(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, "c1", "c2")
	cellIDs, l, router := cl.cellIDs, cl.ledger, cl.router
	seedThroughRouter(t, l, router, cl.etcd.Endpoint, cellIDs, 1000, 10_000, 0)
	// The same, as a gateway would send it: batches of 20, each split by
	// the router into one sub-batch per cell.
	seedThroughRouter(t, l, router, cl.etcd.Endpoint, cellIDs, 1000, 10_000, 20)
}

// seedThroughRouter runs the seed scenario through the router (batches of
// batch items when > 1) and checks that it passed and was celled.
func seedThroughRouter(t *testing.T, l *ledger.Ledger, router, endpoint string, cellIDs []string, stock, requests int64, batch int) {
	t.Helper()
	config := bench.DefaultConfig(bench.ScenarioSeed)
	config.Target, config.AdminToken = router, token
	config.Stock, config.Requests, config.Concurrency, config.Batch = stock, requests, 32, batch
	// A bound for a run that hangs, not a speed test: at 20,000 attempts on
	// a machine loaded by other packages' tests, a minute was passed once.
	config.MaxTime = 5 * time.Minute
	config.Cells = bench.CellsConfig{Etcd: endpoint, Cells: cellIDs, Initial: -1, Chunk: 50}
	result, err := bench.Run(context.Background(), config)
	if err != nil {
		t.Fatal(err)
	}
	if !result.Passed || result.Accepted != config.Stock {
		t.Fatalf("seed through the router (batch %d): passed %v, accepted %d of %d; failures %v; audit %+v",
			batch, result.Passed, result.Accepted, config.Stock, result.Failures, result.Audit)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pubs, err := cells.ReadPublished(ctx, l, "")
	if err != nil {
		t.Fatal(err)
	}
	var p *cells.Published
	for i := range pubs {
		if pubs[i].Definition.CampaignID == result.CampaignID {
			p = &pubs[i]
		}
	}
	if p == nil {
		t.Fatalf("campaign %s not published in etcd: the tool defined it some other way", result.CampaignID)
	}
	a, err := cells.AuditSKU(ctx, l, *p, nil, token)
	if err != nil {
		t.Fatal(err)
	}
	if !a.OK {
		t.Fatalf("cluster audit: %v", a.Problems)
	}
	topUps := 0
	for _, c := range cellIDs {
		ca := a.Cells[c]
		if ca.Reserved+ca.Confirmed == 0 {
			t.Errorf("cell %s sold nothing: the router did not split the sale", c)
		}
		topUps += len(a.Ledger.Allocs[c]) - 1 // allocation 1 is the initial grant
	}
	if a.NeverGranted+a.Free != 0 || topUps == 0 {
		t.Errorf("the central pool was not sold through top-ups: %d never granted, %d free, %d top-ups", a.NeverGranted, a.Free, topUps)
	}
	t.Logf("batch %d: sold %d units through the router in %d top-ups; %d answers", batch, result.Accepted, topUps, result.Requests)
}
