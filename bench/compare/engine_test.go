package compare

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// memoryEngine is a stand-in for actors/, to exercise the adapter.
type memoryEngine struct {
	mu   sync.Mutex
	skus map[string]*memorySKU
}

type memorySKU struct {
	engine    *memoryEngine
	limit     int64
	available int64
	requests  map[string]string // request -> user
	users     map[string]bool
}

func (e *memoryEngine) DefineSKU(ctx context.Context, campaignID, skuID string, saleLimit int64) (Reserver, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	sku := &memorySKU{engine: e, limit: saleLimit, available: saleLimit, requests: map[string]string{}, users: map[string]bool{}}
	e.skus[campaignID+"/"+skuID] = sku
	return sku, nil
}

func (s *memorySKU) Reserve(ctx context.Context, requestID, userID string) (bool, bool, error) {
	s.engine.mu.Lock()
	defer s.engine.mu.Unlock()
	if _, ok := s.requests[requestID]; ok {
		return true, false, nil
	}
	if s.users[userID] {
		return false, false, nil
	}
	if s.available == 0 {
		return false, true, nil
	}
	s.available--
	s.requests[requestID] = userID
	s.users[userID] = true
	return true, false, nil
}

func (e *memoryEngine) Audit(ctx context.Context, campaignID, skuID string) (EngineAudit, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	sku := e.skus[campaignID+"/"+skuID]
	reserved := int64(len(sku.requests))
	return EngineAudit{SaleLimit: sku.limit, Available: sku.available, Reserved: reserved, InvariantOK: sku.available+reserved == sku.limit}, nil
}

func (e *memoryEngine) Close() error { return nil }

func TestEngineAdapterDrivesAnInProcessEngine(t *testing.T) {
	saved := EngineFactory
	t.Cleanup(func() { EngineFactory = saved })
	EngineFactory = func(dataDir string) (Engine, error) { return &memoryEngine{skus: map[string]*memorySKU{}}, nil }
	var log bytes.Buffer
	rows, _ := RunMatrix(context.Background(), []Target{NewEngineTarget(t.TempDir())}, MatrixOptions{
		Concurrencies: []int{8}, Extra: map[string][]int{"engine": {8, 32}, "redis": {64}}, Scenarios: []string{scenarioHot, scenarioSeed},
		HotDuration: 200 * time.Millisecond, SeedRequests: 2000, SeedStock: 100, SeedTimeout: 20 * time.Second,
		RepeatShare: 0.05, RetryShare: 0.05, MaxResends: 3, Seed: 1,
	}, &log)
	// 8 is a main level already; 32 runs hot only; redis's extras are not the engine's.
	if len(rows) != 3 || rows[2].Concurrency != 32 || rows[2].Scenario != scenarioHot {
		t.Fatalf("rows %+v\n%s", rows, log.String())
	}
	for _, row := range rows {
		if row.Skipped != "" || !row.Correct {
			t.Errorf("%s: skipped %q, verdict %q", row.Scenario, row.Skipped, row.Verdict)
		}
		if row.ServerCPUS != -1 {
			t.Errorf("%s: server CPU %v for an in-process engine", row.Scenario, row.ServerCPUS)
		}
	}
	if !strings.Contains(rows[1].Verdict, "sold 100/100") {
		t.Errorf("seed verdict %q", rows[1].Verdict)
	}
	var table bytes.Buffer
	WriteTables(&table, rows, tableLevels([]int{8}, []int{8, 32, 4096}))
	if !strings.Contains(table.String(), "in-process") || !strings.Contains(table.String(), "== concurrency 8") ||
		!strings.Contains(table.String(), "== concurrency 32") {
		t.Errorf("table:\n%s", table.String())
	}
	if strings.Contains(table.String(), "== concurrency 4096") {
		t.Errorf("a table without rows is printed:\n%s", table.String())
	}
}
