package compare

import (
	"encoding/json"
	"os"
)

// Cell is one measured cell as --json writes it: a JSON array of these,
// with exactly these keys, for scripts and for the table of
// docs/benchmarks.md.
type Cell struct {
	// Target is seckilld, seckilld-rs, redis, postgres, engine, null-http,
	// null-fsync, or wrk-seckilld and wrk-null-http (the independent load
	// generator).
	Target string `json:"target"`
	// Scenario is hot or seed.
	Scenario string `json:"scenario"`
	// Concurrency is the closed loop's requests in flight (wrk: its
	// connections).
	Concurrency int `json:"concurrency"`
	// Batch is the attempts per request (1: single requests).
	Batch int `json:"batch"`
	// RatePerS is items (attempts answered) per second.
	RatePerS float64 `json:"rate_per_s"`
	// P50MS and P99MS are the latency percentiles of the requests, in ms
	// (a batch's items share its latency).
	P50MS float64 `json:"p50_ms"`
	P99MS float64 `json:"p99_ms"`
	// ServerCPUUSPerItem is the server process's CPU time per item, in
	// µs (seckilld-rs: both replicas' together); null where the server runs in this process (engine, postgres's
	// children are counted) or has no process.
	ServerCPUUSPerItem *float64 `json:"server_cpu_us_per_item"`
	// AuditOK is the cell's verdict (the target's own state agreed with
	// the answers; seed: sold exactly out, one per user); null where the
	// target keeps no state (the null servers).
	AuditOK *bool `json:"audit_ok"`
}

// Cells turns the measured rows into cells; skipped rows are left out.
func Cells(rows []Row) []Cell {
	cells := []Cell{}
	for _, row := range rows {
		if row.Skipped != "" {
			continue
		}
		cell := Cell{Target: row.Target, Scenario: row.Scenario, Concurrency: row.Concurrency, Batch: max(row.Batch, 1),
			RatePerS: row.ThroughputRPS, P50MS: row.P50MS, P99MS: row.P99MS}
		if perItem, ok := row.serverCPUPerItem(); ok {
			cell.ServerCPUUSPerItem = &perItem
		}
		if row.Audit.Checked {
			ok := row.Correct
			cell.AuditOK = &ok
		}
		cells = append(cells, cell)
	}
	return cells
}

// serverCPUPerItem is the server's CPU time per item of the row, in µs;
// false where it is not separable (ServerCPUS -1) or nothing was answered.
func (row Row) serverCPUPerItem() (float64, bool) {
	if row.ServerCPUS < 0 || row.Requests <= 0 {
		return 0, false
	}
	return row.ServerCPUS * 1e6 / float64(row.Requests), true
}

// writeJSON writes v, indented, to path.
func writeJSON(path string, v any) error {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(body, '\n'), 0o644)
}
