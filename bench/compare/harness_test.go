package compare

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/bench"
	"github.com/seckill/seckill/internal/version"
)

// turnTarget is a stand-in target that says yes to every reservation and
// records, in a log shared by several targets, the cells it was given.
type turnTarget struct {
	name     string
	startErr error
	mu       *sync.Mutex
	cells    *[]string
	closed   bool
}

func (t *turnTarget) Name() string                    { return t.name }
func (t *turnTarget) Start(ctx context.Context) error { return t.startErr }
func (t *turnTarget) Prepare(ctx context.Context, sku SKURef) (bench.Reserver, error) {
	t.mu.Lock()
	cell := strings.Join(strings.SplitN(sku.CampaignID, "-", 4)[:3], "-") // cmp-<scenario>-c<concurrency>
	*t.cells = append(*t.cells, t.name+" "+cell)
	t.mu.Unlock()
	var n sync.Mutex
	next := 0
	return bench.ReserverFunc(func(ctx context.Context, requestID, userID string) (bench.Reply, error) {
		n.Lock()
		next++
		id := fmt.Sprintf("%s-%d", t.name, next)
		n.Unlock()
		return bench.Reply{Outcome: bench.OutcomeAccepted, ReservationID: id}, nil
	}), nil
}
func (t *turnTarget) Audit(ctx context.Context, sku SKURef) (Audit, error) {
	return Audit{Detail: "stand-in"}, nil
}
func (t *turnTarget) ServerCPU() (time.Duration, bool) { return 0, false }
func (t *turnTarget) Close() error                     { t.closed = true; return nil }

func TestRunMatrixTakesTurnsCellByCell(t *testing.T) {
	var mu sync.Mutex
	var cells []string
	a := &turnTarget{name: "a", mu: &mu, cells: &cells}
	b := &turnTarget{name: "b", mu: &mu, cells: &cells}
	down := &turnTarget{name: "down", mu: &mu, cells: &cells, startErr: fmt.Errorf("%w: not installed", ErrUnavailable)}
	rows, _ := RunMatrix(context.Background(), []Target{a, down, b}, MatrixOptions{
		Concurrencies: []int{16, 64}, Extra: map[string][]int{"b": {128}}, Scenarios: []string{scenarioHot},
		HotDuration: 50 * time.Millisecond, Seed: 1,
	}, io.Discard)
	want := []string{"a cmp-hot-c16", "b cmp-hot-c16", "a cmp-hot-c64", "b cmp-hot-c64", "b cmp-hot-c128"}
	if !slices.Equal(cells, want) {
		t.Errorf("cells ran in the order %q, want %q", cells, want)
	}
	var got []string
	for _, row := range rows {
		got = append(got, fmt.Sprintf("%s/%d/%t", row.Target, row.Concurrency, row.Skipped != ""))
	}
	if wantRows := []string{"a/16/false", "down/16/true", "b/16/false", "a/64/false", "down/64/true", "b/64/false", "b/128/false"}; !slices.Equal(got, wantRows) {
		t.Errorf("rows %q, want %q", got, wantRows)
	}
	if !a.closed || !b.closed {
		t.Errorf("targets left running: a closed %t, b closed %t", a.closed, b.closed)
	}
}

func TestRunMatrixRoundsKeepEachCellsMedianRound(t *testing.T) {
	var mu sync.Mutex
	var cells []string
	a := &turnTarget{name: "a", mu: &mu, cells: &cells}
	rows, rounds := RunMatrix(context.Background(), []Target{a}, MatrixOptions{
		Concurrencies: []int{16}, Scenarios: []string{scenarioHot}, HotDuration: 30 * time.Millisecond, Seed: 1, Rounds: 3,
	}, io.Discard)
	if len(cells) != 3 || len(rounds) != 3 || len(rows) != 1 {
		t.Fatalf("%d cells run, %d round rows, %d rows; want 3, 3, 1", len(cells), len(rounds), len(rows))
	}
	for i, row := range rounds {
		if row.Round != i+1 {
			t.Errorf("round row %d says round %d", i, row.Round)
		}
	}
}

func TestMedianRowsPicksTheMiddleRoundWhole(t *testing.T) {
	row := func(round int, rps, p99 float64, correct bool) Row {
		return Row{Target: "t", Scenario: scenarioHot, Concurrency: 64, Round: round, ThroughputRPS: rps, P99MS: p99,
			Correct: correct, Verdict: fmt.Sprintf("verdict %d", round)}
	}
	got := medianRows([]Row{row(1, 10, 1, true), row(2, 30, 3, true), row(3, 20, 2, true)})
	if len(got) != 1 || got[0].Round != 3 || got[0].P99MS != 2 || !got[0].Correct {
		t.Fatalf("median %+v, want round 3 whole", got)
	}
	got = medianRows([]Row{row(1, 10, 1, true), row(2, 30, 3, false), row(3, 20, 2, true), row(4, 40, 4, true)})
	if got[0].Round != 3 || got[0].Correct || got[0].Verdict != "verdict 2 (round 2)" {
		t.Fatalf("median of four with a failed round %+v, want round 3, incorrect, round 2's verdict", got[0])
	}
	single := row(0, 10, 1, false)
	if got = medianRows([]Row{single}); got[0].Verdict != single.Verdict || got[0].Correct {
		t.Fatalf("a single failed round became %+v", got[0])
	}
}

func TestMainRefusesBadRoundsAndProgress(t *testing.T) {
	// A work dir or an output's directory that does not exist, shares no
	// plan takes, or no scenario or target is refused before any server
	// starts: the run would measure nothing and exit 0, or lose its
	// result after the whole matrix.
	// The matrix around them is tiny: were they not refused, the run would
	// be over in a second (and exit 0 or 3).
	missing := filepath.Join(t.TempDir(), "missing")
	tiny := []string{"--targets", "engine", "--concurrency", "2", "--scenarios", "hot", "--hot-duration", "50ms", "--batch", "0",
		"--wrk-concurrency", "", "--engine-concurrency", "", "--pause", "0s", "--progress", "off"}
	for _, args := range [][]string{{"--rounds", "0"}, {"--rounds", "10"}, {"--progress", "weird"}, {"--concurrency", "x"},
		append([]string{"--work-dir", missing}, tiny...), append([]string{"--json", filepath.Join(missing, "cells.json")}, tiny...),
		append([]string{"--report-json", filepath.Join(missing, "report.json")}, tiny...),
		append(tiny, "--repeat-share", "2"), append(tiny, "--retry-share", "-0.1"), append(tiny, "--repeat-share", "0.6", "--retry-share", "0.6"),
		append(tiny, "--timeout", "0s"), append(tiny, "--scenarios", ""), append(tiny, "--targets", "")} {
		var stdout, stderr strings.Builder
		if status := Main(context.Background(), args, &stdout, &stderr); status != exitUsage {
			t.Errorf("%q: exit %d, want %d\n%s", args, status, exitUsage, stderr.String())
		}
		if stdout.Len() != 0 {
			t.Errorf("%q: printed %q before refusing", args, stdout.String())
		}
	}
	for _, args := range [][]string{{"--json", filepath.Join(missing, "passes.json")}, {"--server-cpuprofile", filepath.Join(missing, "seckilld.prof")}} {
		var stdout, stderr strings.Builder
		if status := PassesMain(context.Background(), append(args, "--seckilld", "/nonexistent/seckilld"), &stdout, &stderr); status != exitUsage ||
			!strings.Contains(stderr.String(), "its directory does not exist") {
			t.Errorf("compare passes %q: exit %d, stderr %q; want %d naming the missing directory", args, status, stderr.String(), exitUsage)
		}
	}
}

// cpuTarget is a turnTarget whose server has used one more second of CPU
// at each reading.
type cpuTarget struct {
	turnTarget
	readings int
}

func (t *cpuTarget) ServerCPU() (time.Duration, bool) {
	t.readings++
	return time.Duration(t.readings) * time.Second, true
}

// Every round's progress line carries its server CPU per item, so the
// rounds of one run can be compared pair by pair, not only the median
// round the table keeps.
func TestRunMatrixPrintsEachRoundsServerCPU(t *testing.T) {
	var mu sync.Mutex
	var cells []string
	a := &cpuTarget{turnTarget: turnTarget{name: "a", mu: &mu, cells: &cells}}
	var log strings.Builder
	_, rounds := RunMatrix(context.Background(), []Target{a}, MatrixOptions{
		Concurrencies: []int{4}, Scenarios: []string{scenarioHot}, HotDuration: 30 * time.Millisecond, Seed: 1, Rounds: 2,
	}, &log)
	if len(rounds) != 2 {
		t.Fatalf("%d round rows, want 2", len(rounds))
	}
	for _, row := range rounds {
		perItem, ok := row.serverCPUPerItem()
		if !ok {
			t.Fatalf("round %d: no server CPU per item (server %v s, %d items)", row.Round, row.ServerCPUS, row.Requests)
		}
		line := fmt.Sprintf("[round %d/2] a hot c=4 batch 1: ", row.Round)
		want := fmt.Sprintf("server %.1f µs/item", perItem)
		var found bool
		for _, l := range strings.Split(log.String(), "\n") {
			found = found || strings.HasPrefix(l, line) && strings.Contains(l, want)
		}
		if !found {
			t.Errorf("no line %q...%q in the progress:\n%s", line, want, log.String())
		}
	}
}

// batchTurnTarget is a turnTarget whose reserver also takes batches,
// accepting every item.
type batchTurnTarget struct{ turnTarget }

func (t *batchTurnTarget) takesBatches() bool { return true }

func (t *batchTurnTarget) Prepare(ctx context.Context, sku SKURef) (bench.Reserver, error) {
	single, err := t.turnTarget.Prepare(ctx, sku)
	return batchAccepter{single}, err
}

type batchAccepter struct{ bench.Reserver }

func (b batchAccepter) ReserveBatch(ctx context.Context, items []bench.BatchItem) ([]bench.Reply, error) {
	replies := make([]bench.Reply, len(items))
	for i, item := range items {
		replies[i], _ = b.Reserve(ctx, item.RequestID, item.UserID)
	}
	return replies, nil
}

// A cell's rate counts items (a batch of 64 is 64 of them), as the
// table's items/s column says: the progress line says so too, for batch
// cells and single ones alike, never req/s.
func TestRunMatrixProgressLineSaysItemsPerSecond(t *testing.T) {
	var mu sync.Mutex
	var cells []string
	a := &batchTurnTarget{turnTarget{name: "a", mu: &mu, cells: &cells}}
	var log strings.Builder
	rows, _ := RunMatrix(context.Background(), []Target{a}, MatrixOptions{
		Concurrencies: []int{2}, Scenarios: []string{scenarioSeed}, SeedRequests: 640, SeedStock: 1000,
		Batch: 8, BatchConcurrencies: []int{2}, SeedTimeout: time.Minute, MaxResends: 1, Seed: 1,
	}, &log)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want a single and a batch cell\n%s", len(rows), log.String())
	}
	for _, row := range rows {
		if row.Requests != 640 {
			t.Errorf("batch %d: %d items counted, want the 640 attempts", row.Batch, row.Requests)
		}
		want := fmt.Sprintf("a seed c=2 batch %d: %.0f items/s, ", row.Batch, row.ThroughputRPS)
		if !strings.Contains(log.String(), want) {
			t.Errorf("no progress line %q in\n%s", want, log.String())
		}
	}
	if strings.Contains(log.String(), "req/s") {
		t.Errorf("a progress line says req/s:\n%s", log.String())
	}
}

// A comparison interrupted (Ctrl-C) prints the cells it ran and says,
// after the tables, that the others did not run: exit 3, never a table
// that looks whole.
func TestInterruptedComparisonSaysSo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr strings.Builder
	status := Main(ctx, []string{"--targets", "engine", "--concurrency", "2", "--scenarios", "hot", "--hot-duration", "50ms",
		"--batch", "0", "--wrk-concurrency", "", "--engine-concurrency", "", "--pause", "0s", "--progress", "off", "--work-dir", t.TempDir()},
		&stdout, &stderr)
	if status != exitRunProblem {
		t.Errorf("exit %d, want %d\n%s%s", status, exitRunProblem, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "interrupted: ") {
		t.Errorf("the output does not say the run was interrupted:\n%s", stdout.String())
	}
}

// A server whose state agrees with every reservation it gave but that
// answered some reserves with something else does not pass: a hot cell's
// items/s counts answers, so its 429s would pass for sales, and a seed
// cell's attempt left without an answer of the API is one the sale never
// settled (the load tool's own verdict fails both the same way).
func TestJudgeCellFailsAnswersThatAreNoReservation(t *testing.T) {
	sku := SKURef{CampaignID: "cmp", SKUID: "sku-1", SaleLimit: bench.HotSaleLimit}
	hot := func(refused bench.Outcome) (bool, string) {
		tally := bench.NewTally(1, nil, 1)
		for i := range 5 {
			reply := bench.Reply{Outcome: bench.OutcomeAccepted}
			if i%2 == 1 && refused != bench.OutcomeAccepted {
				reply = bench.Reply{Outcome: refused}
			}
			tally.Record(0, bench.Attempt{Index: int64(i)}, reply, time.Now(), time.Millisecond)
			tally.FinishAttempt(0, reply.Outcome)
		}
		accepted := tally.Counts()[bench.OutcomeAccepted]
		return judgeCell(scenarioHot, sku, nil, tally, bench.LedgerReport{Accepted: accepted},
			Audit{Checked: true, Consistent: true, Sold: accepted, Available: sku.SaleLimit - accepted})
	}
	if ok, verdict := hot(bench.OutcomeAccepted); !ok {
		t.Fatalf("a hot cell of reservations only: %s, want ok", verdict)
	}
	for outcome, want := range map[bench.Outcome]string{bench.OutcomeQueueFull: "queue_full 2", bench.OutcomeError: "error 2"} {
		if ok, verdict := hot(outcome); ok || !strings.Contains(verdict, want) {
			t.Errorf("a hot cell with two answers %s: correct %t, %q; want a failure naming %q", outcome, ok, verdict, want)
		}
	}

	seed := func(lastOfFirst bench.Outcome) (bool, string) {
		plan, err := bench.NewPlan(bench.PlanSpec{Attempts: 4, Users: 4, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		seedSKU := SKURef{CampaignID: "cmp", SKUID: "sku-1", SaleLimit: 2}
		tally := bench.NewTally(1, nil, 1)
		for i := range plan.Len() {
			last := bench.OutcomeSoldOut
			switch {
			case i == 0:
				last = lastOfFirst
			case i < 3:
				last = bench.OutcomeAccepted
			}
			tally.Record(0, bench.Attempt{Index: i}, bench.Reply{Outcome: last}, time.Now(), time.Millisecond)
			tally.FinishAttempt(0, last)
		}
		return judgeCell(scenarioSeed, seedSKU, plan, tally, bench.LedgerReport{Accepted: 2},
			Audit{Checked: true, Consistent: true, Sold: 2})
	}
	if ok, verdict := seed(bench.OutcomeSoldOut); !ok {
		t.Fatalf("a seed cell that sold out with every attempt answered: %s, want ok", verdict)
	}
	if ok, verdict := seed(bench.OutcomeError); ok || !strings.Contains(verdict, "unanswered 1") {
		t.Errorf("a seed cell with an attempt left unanswered: correct %t, %q; want a failure naming unanswered 1", ok, verdict)
	}
}

// A seed cell whose plan has fewer users than units (--seed-stock above
// --seed-requests) sells one unit to each user: a server that did so
// passes, one that sold fewer does not.
func TestJudgeCellSeedWithFewerUsersThanUnits(t *testing.T) {
	plan, err := bench.NewPlan(bench.PlanSpec{Attempts: 4, Users: 4, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	sku := SKURef{CampaignID: "cmp", SKUID: "sku-1", SaleLimit: 10}
	judge := func(sold int64) (bool, string) {
		tally := bench.NewTally(1, nil, 1)
		for i := range plan.Len() {
			last := bench.OutcomeAccepted
			if i >= sold {
				last = bench.OutcomeSoldOut
			}
			tally.Record(0, bench.Attempt{Index: i}, bench.Reply{Outcome: last}, time.Now(), time.Millisecond)
			tally.FinishAttempt(0, last)
		}
		return judgeCell(scenarioSeed, sku, plan, tally, bench.LedgerReport{Accepted: sold},
			Audit{Checked: true, Consistent: true, Sold: sold, Available: sku.SaleLimit - sold})
	}
	if ok, verdict := judge(4); !ok {
		t.Errorf("one unit to each of the plan's 4 users, stock 10: %s, want ok", verdict)
	}
	if ok, verdict := judge(3); ok {
		t.Errorf("3 units to the plan's 4 users, stock 10: %s, want a failure", verdict)
	}
}

// The report says where and when it was measured: the commit the figures
// belong to and the load average around the run (other work competing
// with the cells), in the JSON and on the page.
func TestReportRecordsCommitAndLoadAverage(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	path := t.TempDir() + "/report.json"
	var stdout, stderr strings.Builder
	Main(ctx, []string{"--targets", "engine", "--concurrency", "2", "--scenarios", "hot", "--hot-duration", "50ms",
		"--batch", "0", "--wrk-concurrency", "", "--engine-concurrency", "", "--pause", "0s", "--progress", "off",
		"--work-dir", t.TempDir(), "--report-json", path}, &stdout, &stderr)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v\n%s%s", err, stdout.String(), stderr.String())
	}
	var report Report
	if err := json.Unmarshal(data, &report); err != nil {
		t.Fatal(err)
	}
	if report.Commit == "" || report.Commit != version.Commit() {
		t.Errorf("report commit %q, want %q", report.Commit, version.Commit())
	}
	if report.LoadAverageBefore < 0 || report.LoadAverageAfter < 0 {
		t.Errorf("load average %v before, %v after: /proc/loadavg unread", report.LoadAverageBefore, report.LoadAverageAfter)
	}
	for _, want := range []string{"commit " + version.Commit(), "load average "} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the output does not say %q:\n%s", want, stdout.String())
		}
	}
}
