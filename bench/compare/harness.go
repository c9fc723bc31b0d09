package compare

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/bench"
)

// Scenario names of the comparison (the bench package's hot and seed).
const (
	scenarioHot  = bench.ScenarioHot
	scenarioSeed = bench.ScenarioSeed
)

// MatrixOptions sizes the comparison.
type MatrixOptions struct {
	// Concurrencies lists the closed-loop concurrencies, one table each.
	Concurrencies []int
	// Extra lists, per target name, more concurrencies at which only its
	// hot scenario runs: the in-process engine's best concurrency lies
	// beyond what socket clients can hold.
	Extra map[string][]int
	// Scenarios lists the scenarios run in each cell (hot, seed).
	Scenarios []string
	// HotDuration is the length of each hot cell.
	HotDuration time.Duration
	// SeedRequests is the number of attempts of each seed cell.
	SeedRequests int64
	// SeedStock is the seed's sale limit.
	SeedStock int64
	// SeedTimeout bounds a seed cell.
	SeedTimeout time.Duration
	// RepeatShare and RetryShare shape the seed's plan.
	RepeatShare, RetryShare float64
	// MaxResends bounds the resends of a seed attempt after an uncertain answer.
	MaxResends int
	// Seed makes the plans reproducible.
	Seed int64
	// Pause separates cells, so a server's background flush does not fall
	// into the next cell.
	Pause time.Duration
	// Progress receives progress lines (nil: none); Terminal redraws in place.
	Progress io.Writer
	// Terminal redraws the progress line in place.
	Terminal bool
	// Rounds is how many times the whole matrix runs (at least 1); each
	// cell's row is then its median round (see medianRows).
	Rounds int
	// Batch, when > 1, adds batch cells: each scenario at each of
	// BatchConcurrencies, Batch attempts per request, for the targets that
	// take batches (batch.go).
	Batch int
	// BatchConcurrencies are the concurrencies of the batch cells.
	BatchConcurrencies []int
	// Wrk, when set, adds the independent load generator's cells (wrk.go).
	Wrk *WrkOptions
}

// Row is one cell: one target, one scenario, one concurrency.
type Row struct {
	// Target names the target.
	Target string `json:"target"`
	// Scenario is hot or seed.
	Scenario string `json:"scenario"`
	// Concurrency is the closed loop's number of workers.
	Concurrency int `json:"concurrency"`
	// Batch is the attempts per request (1: single requests).
	Batch int `json:"batch"`
	// Skipped says why the cell did not run (empty when it ran).
	Skipped string `json:"skipped,omitempty"`
	// Requests is the number of answers (and errors), one per item: a
	// batch of 64 counts 64.
	Requests int64 `json:"requests"`
	// ElapsedS is the cell's load time.
	ElapsedS float64 `json:"elapsed_s"`
	// ThroughputRPS is Requests per second: items per second (the
	// table's items/s).
	ThroughputRPS float64 `json:"throughput_rps"`
	// P50MS is the median latency over every answer.
	P50MS float64 `json:"p50_ms"`
	// P99MS is the 99th percentile latency over every answer.
	P99MS float64 `json:"p99_ms"`
	// ServerCPUS is the server's CPU seconds during the cell (-1: not separable).
	ServerCPUS float64 `json:"server_cpu_s"`
	// ServerCPUPartsS splits ServerCPUS by process where the server is
	// several (a replica set: the primary's, then the standby's).
	ServerCPUPartsS []float64 `json:"server_cpu_parts_s,omitempty"`
	// ClientCPUS is this process's CPU seconds during the cell.
	ClientCPUS float64 `json:"client_cpu_s"`
	// Accepted counts distinct reservations the clients were given.
	Accepted int64 `json:"accepted"`
	// SoldOut counts SOLD_OUT answers.
	SoldOut int64 `json:"sold_out"`
	// Errors counts requests without a usable answer.
	Errors int64 `json:"errors"`
	// Audit is the target's own state after the cell.
	Audit Audit `json:"audit"`
	// Correct is the cell's verdict.
	Correct bool `json:"correct"`
	// Verdict says it in words.
	Verdict string `json:"verdict"`
	// Round numbers the round the row comes from (from 1; 0 when the run
	// had one round).
	Round int `json:"round,omitempty"`
}

// RunMatrix starts every target, runs every cell and stops them, and
// returns the rows grouped by concurrency, then in the targets' order. The
// targets take turns cell by cell (at each concurrency and scenario, each
// target once, then the next cell), so that a machine whose speed drifts
// over minutes (a shared VM) shifts every target alike and the ratios of
// one run stay fair; the servers not under load meanwhile sit idle. Each
// cell is bounded in time.
//
// With several rounds, rows holds each cell's median round and rounds
// every round's row (nil with one round).
func RunMatrix(ctx context.Context, targets []Target, options MatrixOptions, log io.Writer) (rows, rounds []Row) {
	var running []Target
	defer func() {
		for _, target := range running {
			if err := target.Close(); err != nil {
				fmt.Fprintf(log, "%s: stop: %v\n", target.Name(), err)
			}
		}
	}()
	for _, target := range targets {
		if reason := start(ctx, target, log); reason != "" {
			rows = append(rows, skippedRows(target.Name(), reason, options)...)
			continue
		}
		running = append(running, target)
	}
	count := max(options.Rounds, 1)
	var all []Row
	done := func() ([]Row, []Row) {
		if count > 1 {
			rounds = orderRows(slices.Clone(all), targets)
		}
		return orderRows(append(rows, medianRows(all)...), targets), rounds
	}
	for round := 1; round <= count; round++ {
		for _, c := range matrixCells(options) {
			for _, target := range running {
				if c.only != "" && c.only != target.Name() {
					continue
				}
				if c.batch > 1 && !takesBatches(target) || c.wrk && !wrkTargets[target.Name()] {
					continue
				}
				if ctx.Err() != nil {
					return done()
				}
				var row Row
				if c.wrk {
					row = runWrkCell(ctx, target, c.concurrency, options)
				} else {
					row = runCell(ctx, target, c.scenario, c.concurrency, c.batch, options)
				}
				if count > 1 {
					row.Round = round
				}
				// Each round's server CPU per item, not only the median
				// round's in the table: the rounds of one run are the
				// pairs to compare on a machine whose speed moves.
				cpu := ""
				if perItem, ok := row.serverCPUPerItem(); ok {
					cpu = fmt.Sprintf(", server %.1f µs/item", perItem)
				}
				fmt.Fprintf(log, "%s%s %s c=%d batch %d: %s items/s, p50 %.2f ms, p99 %.2f ms%s, %s\n", roundLabel(round, count), row.Target, row.Scenario,
					row.Concurrency, row.Batch, strconv.FormatFloat(row.ThroughputRPS, 'f', 0, 64), row.P50MS, row.P99MS, cpu, row.Verdict)
				all = append(all, row)
				bench.RealClock{}.SleepUntil(ctx, time.Now().Add(options.Pause))
			}
		}
	}
	return done()
}

// roundLabel prefixes a progress line with its round when there are several.
func roundLabel(round, rounds int) string {
	if rounds < 2 {
		return ""
	}
	return fmt.Sprintf("[round %d/%d] ", round, rounds)
}

// medianRows keeps, of the rounds of each cell, the one with the median
// throughput (the lower middle for an even count), whole: its latency,
// CPU and audit come from the same round. A cell is correct only if every
// round was: another round's failed verdict replaces the median's.
func medianRows(all []Row) []Row {
	type key struct {
		target, scenario   string
		concurrency, batch int
	}
	var order []key
	cells := map[key][]Row{}
	for _, row := range all {
		k := key{row.Target, row.Scenario, row.Concurrency, row.Batch}
		if cells[k] == nil {
			order = append(order, k)
		}
		cells[k] = append(cells[k], row)
	}
	out := make([]Row, 0, len(order))
	for _, k := range order {
		rounds := cells[k]
		sorted := slices.Clone(rounds)
		slices.SortStableFunc(sorted, func(a, b Row) int { return cmp.Compare(a.ThroughputRPS, b.ThroughputRPS) })
		median := sorted[(len(sorted)-1)/2]
		for _, row := range rounds {
			if !row.Correct && row.Skipped == "" && row.Round != median.Round {
				median.Correct, median.Verdict = false, fmt.Sprintf("%s (round %d)", row.Verdict, row.Round)
				break
			}
		}
		out = append(out, median)
	}
	return out
}

// start starts one target; it returns why the target's cells are skipped,
// or "" when it runs.
func start(ctx context.Context, target Target, log io.Writer) string {
	fmt.Fprintf(log, "%s: starting\n", target.Name())
	err := target.Start(ctx)
	if err == nil {
		return ""
	}
	_ = target.Close()
	if isUnavailable(err) {
		fmt.Fprintf(log, "%s: SKIPPED: %v\n", target.Name(), err)
		return err.Error()
	}
	fmt.Fprintf(log, "%s: FAILED to start: %v\n", target.Name(), err)
	return "failed to start: " + err.Error()
}

// skippedRows are the rows of a target that could not start.
func skippedRows(target, reason string, options MatrixOptions) []Row {
	var rows []Row
	for _, concurrency := range options.Concurrencies {
		for _, scenario := range options.Scenarios {
			rows = append(rows, Row{Target: target, Scenario: scenario, Concurrency: concurrency, Batch: 1, Skipped: reason})
		}
	}
	return rows
}

// matrixCell is one scenario at one concurrency, for every target or, for
// the extra levels, only the one named.
type matrixCell struct {
	scenario    string
	concurrency int
	only        string
	batch       int  // > 1: a batch cell, for the targets that take batches
	wrk         bool // a cell of the independent load generator
}

// matrixCells lists the cells in the order they run: each concurrency with
// each scenario, then each target's extra hot levels.
func matrixCells(options MatrixOptions) []matrixCell {
	var cells []matrixCell
	for _, concurrency := range options.Concurrencies {
		for _, scenario := range options.Scenarios {
			cells = append(cells, matrixCell{scenario: scenario, concurrency: concurrency})
		}
	}
	if options.Batch > 1 {
		for _, concurrency := range options.BatchConcurrencies {
			for _, scenario := range options.Scenarios {
				cells = append(cells, matrixCell{scenario: scenario, concurrency: concurrency, batch: options.Batch})
			}
		}
	}
	if options.Wrk != nil && slices.Contains(options.Scenarios, scenarioHot) {
		for _, concurrency := range options.Wrk.Concurrencies {
			cells = append(cells, matrixCell{scenario: scenarioHot, concurrency: concurrency, wrk: true})
		}
	}
	names := slices.Sorted(maps.Keys(options.Extra))
	for _, name := range names {
		for _, concurrency := range options.Extra[name] {
			if slices.Contains(options.Scenarios, scenarioHot) && !slices.Contains(options.Concurrencies, concurrency) {
				cells = append(cells, matrixCell{scenario: scenarioHot, concurrency: concurrency, only: name})
			}
		}
	}
	return cells
}

// orderRows sorts rows by concurrency, then by the targets' order, then
// by scenario in the order they ran (stable).
func orderRows(rows []Row, targets []Target) []Row {
	rank := map[string]int{}
	for i, target := range targets {
		rank[target.Name()] = i
	}
	slices.SortStableFunc(rows, func(a, b Row) int {
		if a.Concurrency != b.Concurrency {
			return cmp.Compare(a.Concurrency, b.Concurrency)
		}
		if a.Batch != b.Batch {
			return cmp.Compare(a.Batch, b.Batch)
		}
		return cmp.Compare(rank[strings.TrimPrefix(a.Target, wrkPrefix)], rank[strings.TrimPrefix(b.Target, wrkPrefix)])
	})
	return rows
}

// runCell runs one scenario at one concurrency on a new SKU of the target.
func runCell(ctx context.Context, target Target, scenario string, concurrency, batch int, options MatrixOptions) Row {
	row := Row{Target: target.Name(), Scenario: scenario, Concurrency: concurrency, Batch: max(batch, 1), ServerCPUS: -1}
	sku := SKURef{
		CampaignID: fmt.Sprintf("cmp-%s-c%d-b%d-%s", scenario, concurrency, row.Batch, strconv.FormatInt(time.Now().UnixNano(), 36)),
		SKUID:      "sku-1",
		SaleLimit:  bench.HotSaleLimit,
	}
	planSpec := bench.PlanSpec{Seed: options.Seed}
	loadSpec := bench.LoadSpec{Concurrency: concurrency, Duration: options.HotDuration, Batch: batch}
	if scenario == scenarioSeed {
		sku.SaleLimit = options.SeedStock
		planSpec = bench.PlanSpec{Attempts: options.SeedRequests, Users: options.SeedRequests,
			RepeatShare: options.RepeatShare, RetryShare: options.RetryShare, Seed: options.Seed}
		loadSpec.Duration = options.SeedTimeout
		loadSpec.Resend = bench.ResendPolicy{QueueFull: true, Uncertain: true, MaxResends: options.MaxResends,
			MinBackoff: 5 * time.Millisecond, MaxBackoff: 2 * time.Second}
	}
	reserver, err := target.Prepare(ctx, sku)
	if err != nil {
		row.Skipped = "prepare: " + err.Error()
		row.Verdict = "FAIL: " + row.Skipped
		return row
	}
	plan, err := bench.NewPlan(planSpec)
	if err != nil {
		row.Skipped = err.Error()
		return row
	}
	loadSpec.Plan = plan
	loadSpec.Reservers = []bench.Reserver{reserver}
	loadSpec.RequestIDPrefix = sku.CampaignID
	ledger := bench.NewLedger(plan)
	tally := bench.NewTally(64, ledger, 1)
	monitor := bench.StartMonitor(bench.MonitorOptions{Tally: tally, Out: options.Progress, Terminal: options.Terminal,
		Label: fmt.Sprintf("%s %s c=%d b=%d", target.Name(), scenario, concurrency, row.Batch), Total: plan.Len(), Duration: loadSpec.Duration})
	serverBefore, serverKnown := target.ServerCPU()
	partsBefore, partsKnown := serverCPUParts(target)
	clientBefore := selfCPU()
	stats, _ := bench.RunLoad(ctx, loadSpec, tally)
	clientAfter := selfCPU()
	serverAfter, serverKnownAfter := target.ServerCPU()
	partsAfter, partsKnownAfter := serverCPUParts(target)
	monitor.Stop()
	if serverKnown && serverKnownAfter {
		row.ServerCPUS = (serverAfter - serverBefore).Seconds()
	}
	if partsKnown && partsKnownAfter && len(partsAfter) == len(partsBefore) {
		for i := range partsAfter {
			row.ServerCPUPartsS = append(row.ServerCPUPartsS, (partsAfter[i] - partsBefore[i]).Seconds())
		}
	}
	row.ClientCPUS = (clientAfter - clientBefore).Seconds()
	counts := tally.Counts()
	row.Requests = tally.Sent()
	row.SoldOut = counts[bench.OutcomeSoldOut]
	row.Errors = counts[bench.OutcomeError]
	row.ElapsedS = stats.Elapsed.Seconds()
	if row.ElapsedS > 0 {
		row.ThroughputRPS = float64(row.Requests) / row.ElapsedS
	}
	latency := bench.Summarize(tally.Latency().Overall)
	row.P50MS, row.P99MS = latency.P50, latency.P99
	report := ledger.Check(1, func(int) int64 { return sku.SaleLimit }, 0) // a cell lasts seconds, the windows 15m: nothing is released
	row.Accepted = report.Accepted
	auditCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	audit, err := target.Audit(auditCtx, sku)
	if err != nil {
		row.Verdict = "FAIL: audit: " + err.Error()
		return row
	}
	row.Audit = audit
	row.Correct, row.Verdict = judgeCell(scenario, sku, plan, tally, report, audit)
	return row
}

// splitCPUTarget is a target whose server is several processes (a replica
// set); ServerCPU is their sum and ServerCPUParts each one's.
type splitCPUTarget interface {
	ServerCPUParts() ([]time.Duration, bool)
}

// serverCPUParts returns each server process's CPU time when the target
// has several; false otherwise.
func serverCPUParts(target Target) ([]time.Duration, bool) {
	split, ok := target.(splitCPUTarget)
	if !ok {
		return nil, false
	}
	return split.ServerCPUParts()
}

// judgeCell decides whether a cell sold correctly: in seed, exactly the
// sale limit (or one unit to each user, when the plan has fewer users than
// units), once per user, every attempt answered by the API, with the
// target's own state agreeing; in hot, every answer a reservation (the
// cell's items/s counts answers, so a 429 or an error would pass for a
// sale) and the target's state agreeing with what the clients were told.
func judgeCell(scenario string, sku SKURef, plan *bench.Plan, tally *bench.Tally, report bench.LedgerReport, audit Audit) (bool, string) {
	if !audit.Checked {
		return true, "n/a: " + audit.Detail
	}
	var problems []string
	if scenario == scenarioHot {
		if refusals := refusedAnswers(tally.Counts()); refusals != "" {
			problems = append(problems, "answers that are no reservation: "+refusals)
		}
	}
	if unanswered := tally.Unanswered(); unanswered > 0 {
		problems = append(problems, fmt.Sprintf("unanswered %d (attempts whose last request got no answer of the API)", unanswered))
	}
	if !audit.Consistent {
		problems = append(problems, "inconsistent: "+audit.Detail)
	}
	if report.Oversold > 0 {
		problems = append(problems, fmt.Sprintf("oversold %d", report.Oversold))
	}
	if report.DuplicateWinners > 0 || audit.DuplicateUsers > 0 {
		problems = append(problems, fmt.Sprintf("duplicate winners %d (clients) / %d (state)", report.DuplicateWinners, audit.DuplicateUsers))
	}
	if report.RetryMismatches > 0 {
		problems = append(problems, fmt.Sprintf("retry mismatches %d", report.RetryMismatches))
	}
	if audit.Sold != report.Accepted {
		problems = append(problems, fmt.Sprintf("state holds %d, clients accepted %d", audit.Sold, report.Accepted))
	}
	if scenario == scenarioSeed {
		if plan.Len() > 0 && tally.Attempts() < plan.Len() {
			problems = append(problems, fmt.Sprintf("incomplete: %d of %d attempts", tally.Attempts(), plan.Len()))
		}
		// A plan with fewer distinct users than units can sell one unit
		// to each of them and no more (as the load tool judges it).
		want := sku.SaleLimit
		if users := plan.UsersBySKU(); len(users) > 0 {
			want = min(want, users[0])
		}
		if audit.Sold != want || audit.Available != sku.SaleLimit-want {
			problems = append(problems, fmt.Sprintf("sold %d/%d, %d left (want %d sold)", audit.Sold, sku.SaleLimit, audit.Available, want))
		}
	}
	if len(problems) > 0 {
		return false, "FAIL: " + strings.Join(problems, "; ")
	}
	if scenario == scenarioSeed {
		return true, fmt.Sprintf("ok: sold %d/%d, one per user", audit.Sold, sku.SaleLimit)
	}
	return true, fmt.Sprintf("ok: %d reserved, state agrees", audit.Sold)
}

// refusedAnswers lists the answers other than a reservation by outcome
// ("queue_full 6206, error 3"); empty when every answer was one.
func refusedAnswers(counts [bench.OutcomeCount]int64) string {
	var parts []string
	for outcome, count := range counts {
		if bench.Outcome(outcome) != bench.OutcomeAccepted && count > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", bench.Outcome(outcome), count))
		}
	}
	return strings.Join(parts, ", ")
}
