// Command seckill-sim runs the deterministic simulation of one SKU engine
// (package sim): seeded histories of calls, ticks, crashes and storage
// faults over the real core, log and recovery code, each checked step by
// step against an independent model.
//
//	seckill-sim [-seeds N] [-first N] [-steps N] [-workers N] [-stop] [-campaign | -admission | -cells | -replicas]
//	seckill-sim -seed N [-steps N] [-trace] [-campaign | -admission | -cells | -replicas]
//	seckill-sim --version | --help
//
// The first form runs seeds first..first+N-1 and prints the totals; each
// failure is printed with its seed and the shortest step list the shrinker
// finds. The second replays one seed exactly (make sim SEED=N). -seeds,
// -first, -steps and -workers are at least 1 (checkCounts). Exit status:
// 0 every check passed, 1 a seed failed, 2 a usage error (one line naming
// the flag).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/seckill/seckill/internal/version"
	"github.com/seckill/seckill/sim"
)

func main() {
	collectLessOften()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// collectLessOften lets the heap grow to five times what is live (GOGC
// 400), within 2 GiB, unless GOGC or GOMEMLIMIT says otherwise: a history
// allocates much and keeps a few MB, so at Go's default the collector ran
// every few MB allocated and took about a third of the simulator's CPU.
func collectLessOften() {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetGCPercent(400)
		debug.SetMemoryLimit(2 << 30)
	}
}

func run(args []string, stdout, stderr io.Writer) int {
	usageOut, done := version.Preamble("seckill-sim", args, stdout, stderr)
	if done {
		return 0
	}
	fs := flag.NewFlagSet("seckill-sim", flag.ContinueOnError)
	fs.SetOutput(usageOut)
	seeds := fs.Uint64("seeds", 10_000, "histories to run, one per seed (at least 1)")
	first := fs.Uint64("first", 1, "first seed (at least 1: -seed 0 means none)")
	steps := fs.Int("steps", 200, "steps per history (at least 1)")
	workers := fs.Int("workers", runtime.NumCPU(), "histories run side by side, at least 1 (each stays on one goroutine)")
	stop := fs.Bool("stop", false, "stop at the first failing seed")
	seed := fs.Uint64("seed", 0, "replay this one seed (with its shortest failing history if it fails)")
	trace := fs.Bool("trace", false, "with -seed: print every step")
	campaign := fs.Bool("campaign", false, "run campaign-mode histories: the SKUs of a campaign whose purchase_limit is \"campaign\" (sim.RunCampaign)")
	admission := fs.Bool("admission", false, "run admission histories: buyers admitted or refused while the disk's fsyncs slow down and recover (sim.RunAdmission)")
	cellsMode := fs.Bool("cells", false, "run cells histories: a celled SKU's engine with the real cells agent over the quota ledger in memory, with ledger faults, lost answers and fencing (sim.RunCells)")
	replicas := fs.Bool("replicas", false, "run replica-set histories: three replicas' real role loops over the coordinator in memory, each primary the engine's shell over a replicated wal, each standby's copy applied by the stream's code, under network faults, crashes, power loss, pauses, clock jumps and switchovers (sim.RunReplicas)")
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2 // the flag package printed the error and the usage
	}
	modes := 0
	for _, on := range []bool{*campaign, *admission, *cellsMode, *replicas} {
		if on {
			modes++
		}
	}
	if err := checkCounts(*seeds, *first, *steps, *workers); err != nil {
		fmt.Fprintln(stderr, "seckill-sim:", err)
		return 2
	}
	if fs.NArg() > 0 || modes > 1 {
		fmt.Fprintln(stderr, "usage: seckill-sim [-seeds N] [-first N] [-steps N] [-workers N] [-stop] | -seed N [-trace]; at most one of -campaign, -admission, -cells, -replicas")
		return 2
	}
	mode := sim.ModeSKU
	switch {
	case *campaign:
		mode = sim.ModeCampaign
	case *admission:
		mode = sim.ModeAdmission
	case *cellsMode:
		mode = sim.ModeCells
	case *replicas:
		mode = sim.ModeReplicas
	}
	if *seed != 0 {
		return replay(*seed, *steps, *trace, mode, stdout)
	}
	start := time.Now()
	sum := sim.RunSeeds(sim.SeedsOptions{
		First: *first, Count: *seeds, Steps: *steps, Workers: *workers, StopAtFirst: *stop, Mode: mode,
		Progress: func(done int) {
			if done%1000 == 0 {
				fmt.Fprintf(stderr, "  %d seeds, %.0f s\n", done, time.Since(start).Seconds())
			}
		},
	})
	elapsed := time.Since(start)
	fmt.Fprintf(stdout, "seeds %d (from %d), steps %d, failures %d, %.1f s (%.0f seeds/min, %d workers)\n",
		sum.Seeds, *first, sum.Steps, len(sum.Failures), elapsed.Seconds(),
		float64(sum.Seeds)/elapsed.Minutes(), *workers)
	fmt.Fprintf(stdout, "faults and events: %s\n", faults(sum.Faults))
	fmt.Fprintf(stdout, "replies: %s\n", faults(sum.Replies))
	for i, f := range sum.Failures {
		if i == 3 {
			fmt.Fprintf(stdout, "... and %d more failing seeds\n", len(sum.Failures)-i)
			break
		}
		printFailure(stdout, f, *steps)
	}
	if len(sum.Failures) > 0 {
		return 1
	}
	return 0
}

// checkCounts refuses a count that runs nothing or cannot be what it
// says: -seeds 0 would pass having checked nothing, a seed 0 could not be
// replayed (-seed 0 means "no seed"), seeds past the largest uint64 would
// wrap to seed 0, and -workers below 1 would run none (RunSeeds reads it
// as one per CPU, not what was asked).
func checkCounts(seeds, first uint64, steps, workers int) error {
	switch {
	case seeds < 1:
		return fmt.Errorf("-seeds must be at least 1, not %d", seeds)
	case first < 1:
		return fmt.Errorf("-first must be at least 1 (seed 0 cannot be replayed: -seed 0 means none), not %d", first)
	case seeds-1 > math.MaxUint64-first:
		return fmt.Errorf("-first %d -seeds %d goes past the last seed, %d", first, seeds, uint64(math.MaxUint64))
	case steps < 1:
		return fmt.Errorf("-steps must be at least 1, not %d", steps)
	case workers < 1:
		return fmt.Errorf("-workers must be at least 1, not %d", workers)
	}
	return nil
}

// replay runs one seed, printing its steps with -trace, and shrinks it if
// it fails.
func replay(seed uint64, steps int, trace bool, mode sim.Mode, stdout io.Writer) int {
	o := sim.Options{Seed: seed, Steps: steps}
	if trace {
		o.Trace = stdout
	}
	res := mode.Run(o)
	fmt.Fprintf(stdout, "seed %d: %d steps; faults and events: %s\n", seed, res.Steps, faults(res.Faults))
	fmt.Fprintf(stdout, "replies: %s\n", faults(res.Replies))
	if res.Err == nil {
		fmt.Fprintln(stdout, "every check passed")
		return 0
	}
	printFailure(stdout, res, steps)
	return 1
}

// printFailure prints a failing seed and its shortest failing history.
func printFailure(w io.Writer, f sim.Result, steps int) {
	fmt.Fprintf(w, "\nFAIL seed %d at step %d: %v\n", f.Seed, f.Step, f.Err)
	if !f.Mode.Shrinks() { // not shrunk: replay it whole
		fmt.Fprintf(w, "replay: seckill-sim %s -seed %d -steps %d -trace\n", f.Mode.Flag(), f.Seed, steps)
		return
	}
	keep, shrunk := sim.Shrink(f)
	indexes, lines := sim.Kept(f, keep)
	fmt.Fprintf(w, "shortest failing history found: %d of %d steps, failing with: %v\n", len(lines), f.Step+1, shrunk.Err)
	for i, line := range lines {
		fmt.Fprintf(w, "  step %d: %s\n", indexes[i], line)
	}
	fmt.Fprintf(w, "replay: make sim SEED=%d", f.Seed)
	if f.Mode.Flag() != "" {
		fmt.Fprintf(w, " SIM_MODE=%s", f.Mode.Flag())
	}
	if steps != 200 {
		fmt.Fprintf(w, " SIM_STEPS=%d", steps)
	}
	fmt.Fprintln(w)
}

// faults formats counts by kind, largest first.
func faults(m map[string]int) string {
	kinds := make([]string, 0, len(m))
	for k := range m {
		kinds = append(kinds, k)
	}
	for i := 1; i < len(kinds); i++ {
		for j := i; j > 0 && (m[kinds[j]] > m[kinds[j-1]] || m[kinds[j]] == m[kinds[j-1]] && kinds[j] < kinds[j-1]); j-- {
			kinds[j], kinds[j-1] = kinds[j-1], kinds[j]
		}
	}
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
