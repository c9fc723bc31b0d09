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

// ceilings are ratios printed beside the goals, not judged: how far the
// machine itself lets a durable server go (null-fsync: HTTP plus one
// append and a group-commit fdatasync, nothing else), so a goal above the
// ceiling reads as what it is.
var ceilings = []goal{
	{what: "durable ceiling (null-fsync) vs Redis + Lua, hot c=64", numer: hotAt("null-fsync", goalConcurrency), denom: hotAt("redis", goalConcurrency)},
	{what: "durable ceiling (null-fsync) vs the null HTTP server, hot c=64", numer: hotAt("null-fsync", goalConcurrency), denom: hotAt("null-http", goalConcurrency)},
	{what: "seckilld vs the durable ceiling (null-fsync), hot c=64", numer: hotAt("seckilld", goalConcurrency), denom: hotAt("null-fsync", goalConcurrency)},
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
// the ratio, what the goal asks, and whether it is met; then the ceilings
// the run measured, for reference.
func WriteGoals(w io.Writer, rows []Row) {
	judged := writeRatios(w, rows, "speed goals (ratios of figures from this run)", speedGoals)
	judged = writeRatios(w, rows, "ceilings of this machine (for reference, not goals)", ceilings) || judged
	if !judged && len(rows) > 0 {
		fmt.Fprintf(w, "\n(no speed goal or ceiling judged: they compare hot rows at %d connections of two targets; run them with --scenarios hot and --concurrency %d)\n",
			goalConcurrency, goalConcurrency)
	}
}

// writeRatios prints the ratios of goals whose figures rows hold, under
// title; a goal with min 0 gets no verdict. It reports whether it printed any.
func writeRatios(w io.Writer, rows []Row, title string, goals []goal) bool {
	header := false
	for _, g := range goals {
		n, nAt := g.numer(rows)
		d, dAt := g.denom(rows)
		if n <= 0 || d <= 0 {
			continue
		}
		if !header {
			fmt.Fprintf(w, "\n== %s ==\n", title)
			header = true
		}
		fmt.Fprintf(w, "  %-62s %6.2fx (%.0f at %s / %.0f at %s)", g.what, n/d, n, nAt, d, dAt)
		if g.min > 0 {
			verdict := "met"
			if n/d < g.min {
				verdict = "NOT met"
			}
			fmt.Fprintf(w, ", goal >= %gx: %s", g.min, verdict)
		}
		fmt.Fprintln(w)
	}
	return header
}
