package compare

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// referenceTarget is the target the ratio column divides by.
const referenceTarget = "seckilld"

// WriteTables prints one table per concurrency: each target and scenario
// with throughput, p50/p99, ratio to seckilld, CPU seconds and the audit.
func WriteTables(w io.Writer, rows []Row, concurrencies []int) {
	reference := map[string]float64{} // scenario/concurrency -> seckilld req/s
	for _, row := range rows {
		if row.Target == referenceTarget && row.Skipped == "" && row.ThroughputRPS > 0 {
			reference[fmt.Sprintf("%s/%d/%d", row.Scenario, row.Concurrency, row.Batch)] = row.ThroughputRPS
		}
	}
	for _, concurrency := range concurrencies {
		if !slices.ContainsFunc(rows, func(row Row) bool { return row.Concurrency == concurrency }) {
			continue // e.g. the engine's own levels in a run without the engine
		}
		fmt.Fprintf(w, "\n== concurrency %d (closed loop) ==\n", concurrency)
		table := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(table, "target\tscenario\tbatch\titems/s\tp50 ms\tp99 ms\tvs seckilld\tserver cpu s\tclient cpu s\t  audit")
		for _, row := range rows {
			if row.Concurrency != concurrency {
				continue
			}
			if row.Skipped != "" {
				fmt.Fprintf(table, "%s\t%s\t%d\t-\t-\t-\t-\t-\t-\t  skipped: %s\n", row.Target, row.Scenario, max(row.Batch, 1), firstLine(row.Skipped))
				continue
			}
			ratio := "-"
			if value, ok := reference[fmt.Sprintf("%s/%d/%d", row.Scenario, row.Concurrency, row.Batch)]; ok {
				ratio = fmt.Sprintf("%.2fx", row.ThroughputRPS/value)
			}
			serverCPU := formatServerCPU(row)
			fmt.Fprintf(table, "%s\t%s\t%d\t%.0f\t%.2f\t%.2f\t%s\t%s\t%.2f\t  %s\n", row.Target, row.Scenario, max(row.Batch, 1),
				row.ThroughputRPS, row.P50MS, row.P99MS, ratio, serverCPU, row.ClientCPUS, row.Verdict)
		}
		table.Flush()
	}
}

// formatServerCPU is the server cpu column: the seconds, followed by each
// process's share where the server is several ("3.10 (2.00+1.10)": a
// replica set's primary, then its standby).
func formatServerCPU(row Row) string {
	if row.ServerCPUS < 0 {
		return "in-process"
	}
	text := fmt.Sprintf("%.2f", row.ServerCPUS)
	if len(row.ServerCPUPartsS) > 1 {
		parts := make([]string, len(row.ServerCPUPartsS))
		for i, part := range row.ServerCPUPartsS {
			parts[i] = fmt.Sprintf("%.2f", part)
		}
		text += " (" + strings.Join(parts, "+") + ")"
	}
	return text
}

// firstLine keeps a skip reason on one line.
func firstLine(text string) string {
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		return text[:i] + " ..."
	}
	return text
}
