package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"

	"golang.org/x/term"
)

// Exit statuses of Main.
const (
	// ExitPass: the run completed and every check held.
	ExitPass = 0
	// ExitChecksFailed: the run completed and a check failed (oversold,
	// duplicate winner, audit violation, not sold out exactly, ...).
	ExitChecksFailed = 1
	// ExitUsage: bad flags.
	ExitUsage = 2
	// ExitRunError: the run could not be carried out (server unreachable,
	// campaign refused, output not writable).
	ExitRunError = 3
)

// Main is the seckill-bench command: it parses args (without the program
// name), runs the scenario, prints the summary on stdout and the progress
// on stderr, writes --json and --report, and returns the exit status.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	config, paths, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return ExitPass
	}
	if err != nil {
		fmt.Fprintf(stderr, "seckill-bench: %v\n", err)
		return ExitUsage
	}
	if err := config.Validate(); err != nil {
		fmt.Fprintf(stderr, "seckill-bench: %v\n", err)
		return ExitUsage
	}
	if err := paths.check(); err != nil {
		fmt.Fprintf(stderr, "seckill-bench: %v\n", err)
		return ExitUsage
	}
	config.Progress, config.Terminal, err = ProgressOutput(paths.progress, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "seckill-bench: %v\n", err)
		return ExitUsage
	}
	if paths.cpuProfile != "" {
		stopProfile, err := StartCPUProfile(paths.cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "seckill-bench: %v\n", err)
			return ExitRunError
		}
		defer stopProfile()
	}
	result, err := Run(ctx, config)
	if err != nil {
		fmt.Fprintf(stderr, "seckill-bench: %v\n", err)
		return ExitRunError
	}
	WriteSummary(stdout, result)
	status := ExitPass
	if !result.Passed {
		status = ExitChecksFailed
	}
	if paths.json != "" {
		if err := result.WriteJSON(paths.json); err != nil {
			fmt.Fprintf(stderr, "seckill-bench: %v\n", err)
			return ExitRunError
		}
	}
	if paths.report != "" {
		if err := WriteReport(paths.report, result); err != nil {
			fmt.Fprintf(stderr, "seckill-bench: %v\n", err)
			return ExitRunError
		}
	}
	return status
}

// ReportMain is "seckill-bench report RESULT.json REPORT.html": it renders
// the HTML report again from a saved JSON result.
func ReportMain(args []string, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprintln(stderr, "usage: seckill-bench report RESULT.json REPORT.html")
		return ExitUsage
	}
	result, err := ReadResult(args[0])
	if err == nil {
		err = WriteReport(args[1], result)
	}
	if err != nil {
		fmt.Fprintf(stderr, "seckill-bench report: %v\n", err)
		return ExitRunError
	}
	return ExitPass
}

// outputPaths are the flags that are not part of Config.
type outputPaths struct {
	json       string
	report     string
	progress   string
	cpuProfile string
}

// check refuses, before the run, an output file whose directory does not
// exist (CheckOutputPaths).
func (p outputPaths) check() error {
	return CheckOutputPaths(map[string]string{"json": p.json, "report": p.report, "cpuprofile": p.cpuProfile})
}

// CheckOutputPaths refuses, before a run, an output file (by flag name;
// an empty path is none) whose directory does not exist: its result would
// be lost after the whole run. Every command of seckill-bench that writes
// files checks them with it before it starts a server.
func CheckOutputPaths(paths map[string]string) error {
	for _, flag := range slices.Sorted(maps.Keys(paths)) {
		path := paths[flag]
		if path == "" {
			continue
		}
		if info, err := os.Stat(filepath.Dir(path)); err != nil || !info.IsDir() {
			return fmt.Errorf("--%s %s: its directory does not exist", flag, path)
		}
	}
	return nil
}

// StartCPUProfile writes a CPU profile (go tool pprof) of this process to
// path until the returned function is called.
func StartCPUProfile(path string) (func(), error) {
	file, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(file); err != nil {
		file.Close()
		return nil, fmt.Errorf("cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		file.Close()
	}, nil
}

// ProgressOutput decides where and how progress is printed for a
// --progress mode: "auto" redraws a line on a terminal and prints plain
// lines otherwise, "tty" always redraws, "plain" never does, "off" prints
// nothing (nil writer). It returns the writer and whether to redraw, or
// an error for another mode.
func ProgressOutput(mode string, stderr io.Writer) (io.Writer, bool, error) {
	switch mode {
	case "off":
		return nil, false, nil
	case "plain":
		return stderr, false, nil
	case "tty":
		return stderr, true, nil
	case "auto":
		file, ok := stderr.(*os.File)
		return stderr, ok && term.IsTerminal(int(file.Fd())), nil
	}
	return nil, false, fmt.Errorf("progress %q is not one of auto, tty, plain, off", mode)
}

// parseFlags reads the flags. Flags left unset take the scenario's defaults
// (DefaultConfig), so "--scenario hot" alone runs a sensible hot test.
func parseFlags(args []string, stderr io.Writer) (Config, outputPaths, error) {
	flags := flag.NewFlagSet("seckill-bench", flag.ContinueOnError)
	flags.SetOutput(stderr)
	parsed := DefaultConfig(ScenarioSeed)
	var paths outputPaths
	flags.StringVar(&parsed.Target, "target", parsed.Target, "base URL of seckilld; loopback addresses only")
	flags.StringVar(&parsed.AdminToken, "admin-token", os.Getenv("SECKILL_ADMIN_TOKEN"), "bearer token of the admin API (default $SECKILL_ADMIN_TOKEN)")
	flags.StringVar(&parsed.PaymentSecret, "payment-secret", os.Getenv("SECKILL_PAYMENT_SECRET"), "HMAC secret to sign payments with, if the server checks X-Signature (default $SECKILL_PAYMENT_SECRET)")
	flags.StringVar(&parsed.EntryPassKeys, "entry-pass-keys", os.Getenv("SECKILL_ENTRY_PASS_KEYS"), "reserve with entry passes minted with the first of these keys (kid:hex,..., as seckilld's; default $SECKILL_ENTRY_PASS_KEYS); the campaign then requires them")
	flags.StringVar(&parsed.Scenario, "scenario", ScenarioSeed, "scenario: "+strings.Join(Scenarios, ", "))
	flags.Int64Var(&parsed.Stock, "stock", parsed.Stock, "sale_limit of each SKU (seed 10000, hot 1e9, many-skus 50, payflow 1000)")
	flags.IntVar(&parsed.SKUs, "skus", parsed.SKUs, "number of SKUs (many-skus 1000, others 1)")
	flags.IntVar(&parsed.SKUsPerCampaign, "skus-per-campaign", parsed.SKUsPerCampaign, "split the SKUs over campaigns of at most this many, opening together, to keep each admin body small (0 = one campaign)")
	flags.Int64Var(&parsed.Requests, "requests", parsed.Requests, "reservation attempts (seed 1000000, many-skus 100000, payflow 1000; hot 0 = until --duration)")
	flags.Int64Var(&parsed.Users, "users", parsed.Users, "distinct users of fresh attempts (0 = one per attempt)")
	flags.IntVar(&parsed.Concurrency, "concurrency", parsed.Concurrency, "closed loop: workers each with one request in flight; open loop: bound on requests in flight")
	flags.IntVar(&parsed.Batch, "batch", 0, "send the attempts this many at a time as one batch reserve per SKU, as a gateway would (0 or 1 = one request each; at most 1000)")
	flags.Float64Var(&parsed.Rate, "rate", 0, "open loop: attempts per second at fixed intended times; latency counts from the intended time (0 = closed loop)")
	flags.DurationVar(&parsed.Duration, "duration", 0, "bound of the load phase (hot 10s; 0 = until --requests are done)")
	flags.Float64Var(&parsed.RepeatShare, "repeat-share", parsed.RepeatShare, "share of repeat clicks: an earlier user, a new request_id (seed, many-skus 0.05)")
	flags.Float64Var(&parsed.RetryShare, "retry-share", parsed.RetryShare, "share of retries: an earlier request_id sent again (seed, many-skus 0.05)")
	flags.DurationVar(&parsed.PaymentWindow, "payment-window", parsed.PaymentWindow, "campaign payment window (payflow 2s, others 15m)")
	flags.Int64Var(&parsed.Seed, "seed", parsed.Seed, "seed of the plan and of the payflow's choices")
	flags.DurationVar(&parsed.Timeout, "timeout", parsed.Timeout, "bound of one HTTP request")
	flags.DurationVar(&parsed.MaxTime, "max-time", parsed.MaxTime, "bound of the whole run, whatever happens; the audit is still read after it")
	flags.IntVar(&parsed.MaxResends, "max-resends", parsed.MaxResends, "bound of resends of one attempt after 429 QUEUE_FULL, 504 RESULT_UNKNOWN or an error (seed, many-skus, payflow)")
	flags.StringVar(&parsed.CampaignID, "campaign", "", "campaign id to define (default: a new unique id per run)")
	var cellList string
	flags.StringVar(&parsed.Cells.Etcd, "etcd", "", "etcd endpoints (host:port,...): the target is a seckill-router, and every SKU is published in etcd as a celled SKU split over --cells (docs/cells.md)")
	flags.StringVar(&cellList, "cells", "", "with --etcd: the cells each SKU is split over, comma-separated (e.g. c1,c2,c3)")
	flags.Int64Var(&parsed.Cells.Initial, "cell-initial", -1, "with --etcd: each cell's initial grant in units (-1 = 90% of the stock split evenly; the rest is the central pool)")
	var chunk uint
	flags.UintVar(&chunk, "cell-chunk", 50, "with --etcd: units of one top-up from the central pool")
	flags.StringVar(&paths.json, "json", "", "write the result as JSON to this file")
	flags.StringVar(&paths.report, "report", "", "write an offline HTML report (charts and summary) to this file")
	flags.StringVar(&paths.progress, "progress", "auto", "progress on stderr: auto (a live line on a terminal, plain lines otherwise), tty, plain, off")
	flags.StringVar(&paths.cpuProfile, "cpuprofile", "", "write a CPU profile of this client (go tool pprof) to this file, for the whole run")
	flags.StringVar(&parsed.ServerFlags, "server-flags", "", "the server's flags, recorded in the result and the report (bench/run-seed.sh passes seckilld's)")
	flags.IntVar(&parsed.ServerPID, "server-pid", 0, "the server's process id, when it runs on this machine: its CPU time is told apart from other processes'")
	flags.Usage = func() {
		fmt.Fprint(stderr, `usage: seckill-bench [flags]                       a load run against seckilld (the flags below)
       seckill-bench compare [flags]               baselines side by side: Redis, PostgreSQL, seckilld, ... (-h there)
       seckill-bench compare passes [flags]        reserves with and without entry passes through one seckilld (-h there)
       seckill-bench orders [flags]                the seed sale through seckilld, its feed and seckill-orders into PostgreSQL (-h there)
       seckill-bench report RESULT.json OUT.html   the HTML report of a saved result (--json) again
       seckill-bench null-server [flags]           the null server compare starts (-h there)

flags:
`)
		flags.PrintDefaults()
		fmt.Fprintf(stderr, "\nexit status: %d pass, %d a check failed, %d bad flags, %d the run could not be carried out\n",
			ExitPass, ExitChecksFailed, ExitUsage, ExitRunError)
	}
	if err := flags.Parse(args); err != nil {
		return Config{}, paths, err
	}
	if flags.NArg() > 0 {
		return Config{}, paths, fmt.Errorf("unexpected argument %q", flags.Arg(0))
	}

	config := DefaultConfig(parsed.Scenario)
	var problems []error
	flags.Visit(func(f *flag.Flag) {
		if err := copyFlag(&config, &parsed, f.Name); err != nil {
			problems = append(problems, err)
		}
	})
	config.AdminToken, config.PaymentSecret, config.EntryPassKeys = parsed.AdminToken, parsed.PaymentSecret, parsed.EntryPassKeys
	config.ServerFlags, config.ServerPID = parsed.ServerFlags, parsed.ServerPID
	config.Cells = CellsConfig{Etcd: parsed.Cells.Etcd, Initial: parsed.Cells.Initial, Chunk: uint32(min(chunk, 1<<30))}
	if cellList != "" {
		config.Cells.Cells = strings.Split(cellList, ",")
	}
	if config.Cells.Enabled() && !isSet(flags, "stock") {
		config.Stock = min(config.Stock, MaxCelledStock)
	}
	if config.Scenario == ScenarioHot && isSet(flags, "requests") && !isSet(flags, "duration") {
		config.Duration = 0 // hot bounded by --requests alone
	}
	return config, paths, errors.Join(problems...)
}

func isSet(flags *flag.FlagSet, name string) bool {
	set := false
	flags.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// copyFlag copies one explicitly set flag from parsed into config.
func copyFlag(config, parsed *Config, name string) error {
	switch name {
	case "target":
		config.Target = parsed.Target
	case "scenario":
		config.Scenario = parsed.Scenario
	case "stock":
		config.Stock = parsed.Stock
	case "skus":
		config.SKUs = parsed.SKUs
	case "batch":
		config.Batch = parsed.Batch
	case "skus-per-campaign":
		config.SKUsPerCampaign = parsed.SKUsPerCampaign
	case "requests":
		config.Requests = parsed.Requests
	case "users":
		config.Users = parsed.Users
	case "concurrency":
		config.Concurrency = parsed.Concurrency
	case "rate":
		config.Rate = parsed.Rate
	case "duration":
		config.Duration = parsed.Duration
	case "repeat-share":
		config.RepeatShare = parsed.RepeatShare
	case "retry-share":
		config.RetryShare = parsed.RetryShare
	case "payment-window":
		config.PaymentWindow = parsed.PaymentWindow
	case "seed":
		config.Seed = parsed.Seed
	case "timeout":
		config.Timeout = parsed.Timeout
	case "max-resends":
		config.MaxResends = parsed.MaxResends
	case "max-time":
		config.MaxTime = parsed.MaxTime
	case "campaign":
		config.CampaignID = parsed.CampaignID
	case "admin-token", "payment-secret", "entry-pass-keys", "etcd", "cells", "cell-initial", "cell-chunk", "json", "report", "progress", "cpuprofile", "server-flags", "server-pid":
		// not per-scenario: taken as parsed
	default:
		return fmt.Errorf("flag %s not handled", name)
	}
	return nil
}
