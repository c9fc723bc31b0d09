package main

import (
	"errors"
	"strings"
	"testing"
)

// The budget is a pure function of the open-files limit and --max-skus:
// the reserve, the SKUs and the connections never add up to more than the
// limit, and a --max-skus that leaves fewer than connectionsMin connections
// is refused with what would fit.
func TestPlanBudget(t *testing.T) {
	const reserved = fdsReserved // 64 + 2 per engine file operation
	for _, c := range []struct {
		openFiles, maxSKUs  int
		wantSKUs, wantConns int
		wantErr             string
	}{
		{20_000, 0, (20_000 - reserved) / 2, (20_000 - reserved) / 2, ""}, // this machine: half each
		{1 << 20, 0, 10_000, connectionsMax, ""},                          // capped by actors.DefaultMaxSKUs and connectionsMax
		{1024, 0, (1024 - reserved) / 2, (1024 - reserved) / 2, ""},
		{reserved + 100, 0, 100 - connectionsMin, connectionsMin, ""}, // the connections' floor first
		{reserved + connectionsMin, 0, 0, 0, "cannot hold"},
		{20_000, 12_000, 12_000, 20_000 - reserved - 12_000, ""},
		{20_000, 20_000 - reserved - connectionsMin, 20_000 - reserved - connectionsMin, connectionsMin, ""},
		{20_000, 20_000 - reserved - connectionsMin + 1, 0, 0, "at most 19790 here"},
	} {
		b, err := planBudget(c.openFiles, c.maxSKUs)
		if c.wantErr != "" {
			if !errors.Is(err, errBudget) || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("planBudget(%d, %d) = %+v, %v; want an error saying %q", c.openFiles, c.maxSKUs, b, err, c.wantErr)
			}
			continue
		}
		if err != nil || b.MaxSKUs != c.wantSKUs || b.MaxConnections != c.wantConns || b.Reserved != reserved {
			t.Errorf("planBudget(%d, %d) = %+v, %v; want %d SKUs, %d connections", c.openFiles, c.maxSKUs, b, err, c.wantSKUs, c.wantConns)
		}
		if used := b.Reserved + b.MaxSKUs*fdsPerSKU + b.MaxConnections; used > c.openFiles || b.MaxConnections < connectionsMin {
			t.Errorf("planBudget(%d, %d) = %+v: %d descriptors planned", c.openFiles, c.maxSKUs, b, used)
		}
	}
}
