package httpapi_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/lottery"
)

// openEngine opens an engine on a data dir of its own, closed at the end
// of the test.
func openEngine(t *testing.T) *actors.Engine {
	t.Helper()
	eng, err := actors.Open(actors.Config{DataDir: t.TempDir(), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

// DefineCampaigns (the --campaigns file at start) is idempotent, applies
// allowed changes, and refuses a disallowed one before applying anything;
// EnsureDemo defines the demo only once.
func TestDefineCampaignsAndDemo(t *testing.T) {
	t.Parallel()
	eng := openEngine(t)
	ctx := context.Background()
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	c := httpapi.Campaign{CampaignID: "file", StartAt: start, EndAt: start.Add(time.Hour),
		SKUs: []httpapi.CampaignSKU{{SKUID: "a", SaleLimit: 5}, {SKUID: "b", SaleLimit: 5}}}
	for i := 0; i < 2; i++ {
		if err := httpapi.DefineCampaigns(ctx, eng, []httpapi.Campaign{c}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	c.SKUs[0].SaleLimit, c.SKUs[1].SaleLimit = 9, 4 // a grows, b would shrink
	err := httpapi.DefineCampaigns(ctx, eng, []httpapi.Campaign{c}, time.Now())
	if !errors.Is(err, sku.ErrInvalidDefinition) {
		t.Fatalf("shrinking: %v", err)
	}
	if got := eng.SKU("file", "a").Stats().Definition.SaleLimit; got != 5 {
		t.Fatalf("a partly applied redefinition: sale_limit %d", got)
	}

	// A data dir with other campaigns (a restored one, say) gets no demo.
	if defined, err := httpapi.EnsureDemo(ctx, eng, time.Now()); err != nil || defined {
		t.Fatalf("EnsureDemo beside other campaigns: %v %v", defined, err)
	}

	fresh := openEngine(t)
	defined, err := httpapi.EnsureDemo(ctx, fresh, time.Now())
	if err != nil || !defined {
		t.Fatalf("first EnsureDemo: %v %v", defined, err)
	}
	first := fresh.SKU("demo", "sku-1").Stats().Definition
	defined, err = httpapi.EnsureDemo(ctx, fresh, time.Now().Add(time.Hour))
	if err != nil || defined || fresh.SKU("demo", "sku-1").Stats().Definition != first {
		t.Fatalf("second EnsureDemo redefined: %v %v", defined, err)
	}
}

// A campaign file applied again after an operator raised a SKU through
// the admin API keeps the larger definition instead of failing the start.
func TestApplyCampaignFileKeepsLargerDefinitions(t *testing.T) {
	t.Parallel()
	eng := openEngine(t)
	ctx := context.Background()
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	file := []httpapi.Campaign{{CampaignID: "f", StartAt: start, EndAt: start.Add(time.Hour),
		SKUs: []httpapi.CampaignSKU{{SKUID: "a", SaleLimit: 5}, {SKUID: "b", SaleLimit: 5}}}}
	if _, err := httpapi.ApplyCampaignFile(ctx, eng, file, time.Now()); err != nil {
		t.Fatal(err)
	}
	raised := []httpapi.Campaign{{CampaignID: "f", StartAt: start, EndAt: start.Add(2 * time.Hour),
		SKUs: []httpapi.CampaignSKU{{SKUID: "a", SaleLimit: 9}}}}
	if err := httpapi.DefineCampaigns(ctx, eng, raised, time.Now()); err != nil {
		t.Fatal(err)
	}
	kept, err := httpapi.ApplyCampaignFile(ctx, eng, file, time.Now()) // the restart
	if err != nil || len(kept) != 1 || kept[0] != "f/a" {
		t.Fatalf("restart with the file: kept %v, %v", kept, err)
	}
	if got := eng.SKU("f", "a").Stats().Definition.SaleLimit; got != 9 {
		t.Fatalf("sale_limit after the restart: %d, want the raised 9", got)
	}
	moved := file
	moved[0].StartAt = start.Add(time.Minute)
	if _, err := httpapi.ApplyCampaignFile(ctx, eng, moved, time.Now()); !errors.Is(err, sku.ErrInvalidDefinition) {
		t.Fatalf("a file that moves start_at: %v", err)
	}
}

// A campaign file's lottery is judged at the clock reading the caller
// passes (seckilld's injected clock), not at the wall clock: defined
// after its entries_close_at by that reading, it is refused before
// anything is defined, and accepted at a reading before it.
func TestDefineCampaignsJudgesOnTheGivenClock(t *testing.T) {
	t.Parallel()
	eng := openEngine(t)
	ctx := context.Background()
	start := time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)
	file := []httpapi.Campaign{{CampaignID: "lf", StartAt: start, EndAt: start.Add(24 * time.Hour),
		SKUs: []httpapi.CampaignSKU{{SKUID: "plain", SaleLimit: 5}, {SKUID: "lot", SaleLimit: 5, Allocation: httpapi.AllocationLottery,
			EntriesOpenAt: "2030-01-01T10:00:00Z", EntriesCloseAt: "2030-01-01T10:15:00Z",
			Beacon: &httpapi.BeaconJSON{Source: lottery.SourceDrandQuicknet, Round: 66_900_000}}}}}
	late := time.Date(2030, 1, 1, 11, 0, 0, 0, time.UTC)
	if err := httpapi.DefineCampaigns(ctx, eng, file, late); !errors.Is(err, sku.ErrInvalidDefinition) {
		t.Fatalf("a lottery defined after its entries_close_at by the given clock: %v", err)
	}
	if n := len(eng.AllStats()); n != 0 {
		t.Fatalf("the refused file defined %d SKUs", n)
	}
	if err := httpapi.DefineCampaigns(ctx, eng, file, time.Now()); err != nil {
		t.Fatalf("the same file before entries_close_at: %v", err)
	}
}
