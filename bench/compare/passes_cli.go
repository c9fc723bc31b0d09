package compare

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/seckill/seckill/bench"
	"github.com/seckill/seckill/internal/version"
)

// The speed target for reserves with entry passes, read against
// the medians of the pairs' ratios: throughput within 10% of reserves
// without passes; the server's CPU per reserve is shown against the same
// margin.
const (
	passTargetThroughputRatio = 0.9
	passTargetCPURatio        = 1.1
)

// PassesMain is "seckill-bench compare passes": it parses args, runs the
// entry-pass comparison (RunPasses), prints its rounds, pairs and medians
// on stdout and progress on stderr, and returns the exit status: 0 when
// every round sold as planned (whether or not the target is met), 1 when
// one did not, 2 bad flags, 3 the run could not be carried out.
func PassesMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("seckill-bench compare passes", flag.ContinueOnError)
	flags.SetOutput(stderr)
	pairs := flags.Int("pairs", 5, "counted pairs of rounds (one without passes, one with)")
	warmup := flags.Int("warmup", 1, "pairs run first and left out of the ratios")
	attempts := flags.Int64("attempts", 200_000, "reserves per round (fresh users, none resent)")
	concurrency := flags.Int("concurrency", 64, "closed-loop workers")
	roundTimeout := flags.Duration("round-timeout", 5*time.Minute, "bound of each round")
	pause := flags.Duration("pause", time.Second, "pause between rounds")
	seed := flags.Int64("seed", 1, "seed of the plan")
	quietCores := flags.Float64("quiet-cores", 0.1, "a pair is quiet when other processes used at most this much of a core during each of its rounds; the quiet pairs get medians of their own")
	workDir := flags.String("work-dir", os.TempDir(), "directory for the server's temporary directory (a real disk: fsync is on)")
	seckilldBinary := flags.String("seckilld", "./bin/seckilld", "seckilld binary")
	timeout := flags.Duration("timeout", 30*time.Second, "bound of one request")
	jsonPath := flags.String("json", "", "write the whole report (every round, the pairs, the medians) as JSON to this file")
	serverProfile := flags.String("server-cpuprofile", "", "start seckilld with --cpuprofile FILE: a CPU profile of the server over the whole run (go tool pprof bin/seckilld FILE)")
	progress := flags.String("progress", "auto", "progress on stderr: auto, tty, plain, off")
	if status, ok := parseFlags(flags, args); !ok {
		return status
	}
	options := PassOptions{Pairs: *pairs, Warmup: *warmup, Attempts: *attempts, Concurrency: *concurrency,
		RoundTimeout: *roundTimeout, Pause: *pause, Seed: *seed, QuietCores: *quietCores}
	if err := options.validate(); err != nil {
		fmt.Fprintln(stderr, err) // "passes: ..."

		return exitUsage
	}
	if err := bench.CheckOutputPaths(map[string]string{"json": *jsonPath, "server-cpuprofile": *serverProfile}); err != nil {
		fmt.Fprintf(stderr, "compare passes: %v\n", err)
		return exitUsage
	}
	if !isExecutable(*seckilldBinary) {
		fmt.Fprintf(stderr, "compare passes: %s not found: build it with go build -o bin/seckilld ./cmd/seckilld\n", *seckilldBinary)
		return exitUsage
	}
	var err error
	options.Progress, options.Terminal, err = bench.ProgressOutput(*progress, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "compare passes: %v\n", err)
		return exitUsage
	}
	machine, commit := describeMachine(), version.Commit()
	fmt.Fprintf(stdout, "seckill compare passes: %s; commit %s\n", machine, commit)
	fmt.Fprintf(stdout, "%d pairs (+%d warm-up) of %d reserves per round, %d workers, one seckilld (--fsync always) over loopback\n",
		*pairs, *warmup, *attempts, *concurrency)
	startedAt, loadBefore := time.Now(), bench.LoadAverage()
	report, runErr := RunPasses(ctx, SeckilldOptions{Binary: *seckilldBinary, WorkDir: *workDir, MaxConns: *concurrency + 16,
		Timeout: *timeout, CPUProfile: *serverProfile}, options, stderr)
	report.StartedAt, report.Machine, report.Commit = startedAt, machine, commit
	report.LoadAverageBefore, report.LoadAverageAfter = loadBefore, bench.LoadAverage()
	report.Options = map[string]string{"pairs": strconv.Itoa(*pairs), "warmup": strconv.Itoa(*warmup),
		"attempts": strconv.FormatInt(*attempts, 10), "concurrency": strconv.Itoa(*concurrency), "quiet_cores": fmt.Sprint(*quietCores)}
	WritePassReport(stdout, report)
	if *jsonPath != "" {
		if err := writeJSON(*jsonPath, report); err != nil {
			fmt.Fprintf(stderr, "compare passes: %v\n", err)
			return exitRunProblem
		}
	}
	switch {
	case runErr != nil:
		fmt.Fprintf(stderr, "compare passes: %v\n", runErr)
		return exitRunProblem
	case !report.Correct:
		return exitIncorrect
	}
	return exitPass
}

// WritePassReport prints the rounds, the pairs' ratios and their medians,
// read against the target.
func WritePassReport(w io.Writer, report PassReport) {
	fmt.Fprintf(w, "load average %.2f before, %.2f after\n\n", report.LoadAverageBefore, report.LoadAverageAfter)
	table := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(table, "pair\tarm\treq/s\tp50 ms\tp99 ms\tserver cpu µs/reserve\tclient cpu µs/reserve\tother cpu s\t  verdict")
	for _, round := range report.Rounds {
		pair := strconv.Itoa(round.Pair)
		if round.Pair < 1 {
			pair = "warm-up"
		}
		fmt.Fprintf(table, "%s\t%s\t%.0f\t%.2f\t%.2f\t%.1f\t%.1f\t%.2f\t  %s\n", pair, round.Arm, round.ThroughputRPS,
			round.P50MS, round.P99MS, round.ServerCPUPerReserveUS, round.ClientCPUPerReserveUS, round.OtherCPUS, round.Verdict)
	}
	table.Flush()
	fmt.Fprintln(w)
	table = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(table, "pair\tpass/plain req/s\tpass/plain server cpu\tpass/plain client cpu\t  quiet")
	for _, pair := range report.Pairs {
		fmt.Fprintf(table, "%d\t%.3fx\t%.3fx\t%.3fx\t  %s\n", pair.Pair, pair.ThroughputRatio, pair.ServerCPURatio, pair.ClientCPURatio,
			map[bool]string{true: "yes", false: "no"}[pair.Quiet])
	}
	fmt.Fprintf(table, "median\t%.3fx\t%.3fx\t%.3fx\t  all %d pairs\n", report.MedianThroughputRatio, report.MedianServerCPURatio,
		report.MedianClientCPURatio, len(report.Pairs))
	if report.QuietPairs > 0 {
		fmt.Fprintf(table, "median\t%.3fx\t%.3fx\t%.3fx\t  %d quiet pairs\n", report.QuietMedianThroughputRatio, report.QuietMedianServerCPURatio,
			report.QuietMedianClientCPURatio, report.QuietPairs)
	}
	table.Flush()
	if len(report.Pairs) == 0 {
		return
	}
	fmt.Fprintln(w)
	writeTargetLine(w, "all pairs", report.MedianThroughputRatio, report.MedianServerCPURatio)
	if report.QuietPairs > 0 {
		writeTargetLine(w, "quiet pairs", report.QuietMedianThroughputRatio, report.QuietMedianServerCPURatio)
	}
}

// writeTargetLine reads one pair of medians against the target.
func writeTargetLine(w io.Writer, which string, throughput, serverCPU float64) {
	fmt.Fprintf(w, "target (reserve throughput with passes within 10%% of without), %s: pass/plain throughput %.3fx (target >= %.2fx): %s; "+
		"server CPU per reserve %.3fx (%s %.2fx)\n", which,
		throughput, passTargetThroughputRatio, metOrNot(throughput >= passTargetThroughputRatio),
		serverCPU, withinOrAbove(serverCPU <= passTargetCPURatio), passTargetCPURatio)
}

// metOrNot says whether a target is met.
func metOrNot(met bool) string {
	if met {
		return "met"
	}
	return "NOT met"
}

// withinOrAbove says whether a ratio is within its bound.
func withinOrAbove(within bool) string {
	if within {
		return "within"
	}
	return "above"
}
