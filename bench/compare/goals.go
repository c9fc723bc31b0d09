package compare

import (
	"fmt"
	"io"
)

// goal is one of the speed targets of the comparison (issue #4), read off
// the hot rows of a run: the ratio of one figure to another, both measured
// in the same run.
type goal struct {
	what  string
	min   float64 // the ratio the goal asks for
	numer func([]Row) (float64, string)
	denom func([]Row) (float64, string)
}

// goalConcurrency is where the ratio goals to other servers are judged: at
// equal concurrency, since a closed loop's throughput is bounded by
// concurrency / latency.
const goalConcurrency = 64

// speedGoals are issue #4's targets on a 2-core machine.
var speedGoals = []goal{
	{what: "seckilld vs Redis + Lua (appendfsync always), hot c=64", min: 2, numer: hotAt("seckilld", goalConcurrency), denom: hotAt("redis", goalConcurrency)},
	{what: "seckilld vs PostgreSQL, hot c=64", min: 30, numer: hotAt("seckilld", goalConcurrency), denom: hotAt("postgres", goalConcurrency)},
	{what: "seckilld vs the null HTTP server, hot c=64", min: 0.7, numer: hotAt("seckilld", goalConcurrency), denom: hotAt("null-http", goalConcurrency)},
	{what: "engine in process (best concurrency) vs Redis + Lua (best)", min: 15, numer: hotBest("engine"), denom: hotBest("redis")},
}

// hotAt reads a target's hot throughput at one concurrency.
func hotAt(target string, concurrency int) func([]Row) (float64, string) {
	return func(rows []Row) (float64, string) {
		for _, row := range rows {
			if row.Target == target && row.Scenario == scenarioHot && row.Concurrency == concurrency && row.Skipped == "" {
				return row.ThroughputRPS, fmt.Sprintf("c=%d", concurrency)
			}
		}
		return 0, ""
	}
}

// hotBest reads a target's best hot throughput over every concurrency.
func hotBest(target string) func([]Row) (float64, string) {
	return func(rows []Row) (float64, string) {
		best, where := 0.0, ""
		for _, row := range rows {
			if row.Target == target && row.Scenario == scenarioHot && row.Skipped == "" && row.ThroughputRPS > best {
				best, where = row.ThroughputRPS, fmt.Sprintf("c=%d", row.Concurrency)
			}
		}
		return best, where
	}
}

// WriteGoals prints each speed goal whose two figures the run measured:
// the ratio, what the goal asks, and whether it is met.
func WriteGoals(w io.Writer, rows []Row) {
	header := false
	for _, g := range speedGoals {
		n, nAt := g.numer(rows)
		d, dAt := g.denom(rows)
		if n <= 0 || d <= 0 {
			continue
		}
		if !header {
			fmt.Fprintln(w, "\n== speed goals (ratios of figures from this run) ==")
			header = true
		}
		verdict := "met"
		if n/d < g.min {
			verdict = "NOT met"
		}
		fmt.Fprintf(w, "  %-62s %6.2fx (%.0f at %s / %.0f at %s), goal >= %gx: %s\n", g.what, n/d, n, nAt, d, dAt, g.min, verdict)
	}
}
