package compare

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/bench"
	"github.com/seckill/seckill/internal/version"
)

// Exit statuses of Main.
const (
	exitPass       = 0
	exitIncorrect  = 1 // a cell that ran did not sell correctly
	exitUsage      = 2
	exitRunProblem = 3
)

// Bounds of the flags.
const (
	maxCellDuration = time.Hour
	maxRounds       = 9
)

// Report is the comparison's JSON output.
type Report struct {
	// StartedAt is when the run began.
	StartedAt time.Time `json:"started_at"`
	// Machine describes where it ran.
	Machine string `json:"machine"`
	// Commit is the commit this program was built from (version.Commit),
	// the one that built seckilld too when make bench-compare built both.
	Commit string `json:"commit"`
	// LoadAverageBefore and LoadAverageAfter are /proc/loadavg's first
	// figure around the run (-1: unreadable): other work competing with
	// the cells shows here.
	LoadAverageBefore float64 `json:"load_average_before"`
	LoadAverageAfter  float64 `json:"load_average_after"`
	// Fsync is the disk probe taken before the run.
	Fsync *FsyncProbe `json:"fsync_probe,omitempty"`
	// Options are the sizes used.
	Options map[string]string `json:"options"`
	// Rows are the cells (with several rounds, each cell's median round).
	Rows []Row `json:"rows"`
	// Rounds are every round's rows, when there were several.
	Rounds []Row `json:"rounds,omitempty"`
}

// Main is "seckill-bench compare": it parses args, runs the matrix, prints
// the tables on stdout and progress on stderr, and returns the exit status.
// "seckill-bench compare passes ..." is the entry-pass comparison instead
// (PassesMain).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "passes" {
		return PassesMain(ctx, args[1:], stdout, stderr)
	}
	flags := flag.NewFlagSet("seckill-bench compare", flag.ContinueOnError)
	flags.SetOutput(stderr)
	flags.Usage = func() {
		fmt.Fprint(stderr, "usage: seckill-bench compare [flags]\n       seckill-bench compare passes [flags]   (reserves with and without entry passes; -h there)\n\nflags:\n")
		flags.PrintDefaults()
	}
	concurrencies := flags.String("concurrency", "16,64,1024", "comma-separated closed-loop concurrencies, one table each")
	engineConcurrencies := flags.String("engine-concurrency", "4096", "more concurrencies at which the in-process engine runs hot (its best lies beyond what sockets hold; empty: none)")
	targetNames := flags.String("targets", "redis,postgres,seckilld,engine,null,null-fsync", "comma-separated targets: redis, postgres, seckilld, seckilld-rs (a replica set of two seckillds on a private etcd, the load sent to the primary; not in the default list), engine, null (the HTTP ceiling), null-fsync (the durable ceiling)")
	scenarios := flags.String("scenarios", "hot,seed", "comma-separated scenarios per cell: hot, seed")
	hotDuration := flags.Duration("hot-duration", 5*time.Second, "length of each hot cell")
	seedRequests := flags.Int64("seed-requests", 100_000, "attempts of each seed cell")
	seedStock := flags.Int64("seed-stock", 10_000, "sale_limit of each seed cell")
	seedTimeout := flags.Duration("seed-timeout", 5*time.Minute, "bound of each seed cell")
	repeatShare := flags.Float64("repeat-share", 0.05, "seed: share of repeat clicks (same user, new request_id)")
	retryShare := flags.Float64("retry-share", 0.05, "seed: share of retries (same request_id)")
	seed := flags.Int64("seed", 1, "seed of the plans")
	pause := flags.Duration("pause", time.Second, "pause between cells")
	rounds := flags.Int("rounds", 1, "run the whole matrix this many times (1-9) and keep each cell's median round: steadier ratios on a noisy machine")
	workDir := flags.String("work-dir", os.TempDir(), "directory for the servers' temporary directories (must be a real disk for fsync to mean anything)")
	seckilldBinary := flags.String("seckilld", "./bin/seckilld", "seckilld binary (skipped when missing)")
	redisBinary := flags.String("redis-server", "", "redis-server binary (default: from PATH)")
	pgBinDir := flags.String("pg-bindir", "", "directory of initdb and postgres (default: newest /usr/lib/postgresql/*/bin)")
	pgPool := flags.Int("pg-pool", 128, "PostgreSQL connection pool size; clients beyond it wait for a connection")
	timeout := flags.Duration("timeout", 30*time.Second, "bound of one request")
	jsonPath := flags.String("json", "", "write the cells to this file: a JSON array, one object per cell (target, scenario, concurrency, batch, rate_per_s, p50_ms, p99_ms, server_cpu_us_per_item, audit_ok)")
	reportPath := flags.String("report-json", "", "write the whole report (options, fsync probe, every row and round) as JSON to this file")
	batch := flags.Int("batch", 64, "attempts per request of the batch cells (seckilld's batch reserve, Redis pipelined, the engine's batch); 0 or 1: no batch cells")
	batchConcurrencies := flags.String("batch-concurrency", "16,64", "comma-separated concurrencies of the batch cells")
	wrkConcurrencies := flags.String("wrk-concurrency", "64", "comma-separated connections of wrk's hot cells against seckilld and the null HTTP server (empty: no wrk cells)")
	wrkBinary := flags.String("wrk", "", "wrk binary (default: from PATH; skipped when missing)")
	progress := flags.String("progress", "auto", "progress on stderr: auto, tty, plain, off")
	cpuProfile := flags.String("cpuprofile", "", "write a CPU profile of this process (clients and the in-process engine) to this file")
	if status, ok := parseFlags(flags, args); !ok {
		return status
	}
	levels, err := parseInts(*concurrencies)
	if err != nil || len(levels) == 0 {
		fmt.Fprintf(stderr, "compare: --concurrency: %v\n", err)
		return exitUsage
	}
	engineLevels, err := parseInts(*engineConcurrencies)
	if err != nil {
		fmt.Fprintf(stderr, "compare: --engine-concurrency: %v\n", err)
		return exitUsage
	}
	batchLevels, err := parseInts(*batchConcurrencies)
	if err != nil || *batch < 0 || *batch > bench.MaxBatch {
		fmt.Fprintf(stderr, "compare: --batch must be in [0, %d], --batch-concurrency: %v\n", bench.MaxBatch, err)
		return exitUsage
	}
	wrkLevels, err := parseInts(*wrkConcurrencies)
	if err != nil {
		fmt.Fprintf(stderr, "compare: --wrk-concurrency: %v\n", err)
		return exitUsage
	}
	scenarioList := splitList(*scenarios)
	if len(scenarioList) == 0 || len(splitList(*targetNames)) == 0 {
		// Nothing would run, and the run would exit 0.
		fmt.Fprintln(stderr, "compare: --scenarios and --targets must name at least one")
		return exitUsage
	}
	if *repeatShare < 0 || *retryShare < 0 || *repeatShare+*retryShare > 1 || *timeout <= 0 {
		// The plan's own rule: refused here, not as every seed cell
		// skipped with the exit status of a run that passed.
		fmt.Fprintln(stderr, "compare: --repeat-share and --retry-share must be >= 0 and add up to at most 1, --timeout > 0")
		return exitUsage
	}
	for _, scenario := range scenarioList {
		if scenario != scenarioHot && scenario != scenarioSeed {
			fmt.Fprintf(stderr, "compare: unknown scenario %q\n", scenario)
			return exitUsage
		}
	}
	if *rounds < 1 || *rounds > maxRounds {
		fmt.Fprintf(stderr, "compare: --rounds must be in [1, %d]\n", maxRounds)
		return exitUsage
	}
	if *hotDuration <= 0 || *hotDuration > maxCellDuration || *seedTimeout <= 0 || *seedTimeout > maxCellDuration ||
		*seedRequests <= 0 || *seedRequests > bench.MaxPlanAttempts || *seedStock <= 0 || *pgPool < 1 {
		fmt.Fprintln(stderr, "compare: durations must be in (0, 1h], requests, stock and pool > 0")
		return exitUsage
	}
	if info, err := os.Stat(*workDir); err != nil || !info.IsDir() {
		// Every target would fail to start in it, and the run, having
		// measured nothing, would still exit 0.
		fmt.Fprintf(stderr, "compare: --work-dir %s: not a directory\n", *workDir)
		return exitUsage
	}
	if err := bench.CheckOutputPaths(map[string]string{"json": *jsonPath, "report-json": *reportPath}); err != nil {
		fmt.Fprintf(stderr, "compare: %v\n", err)
		return exitUsage
	}
	maxLevel := 0
	for _, level := range slices.Concat(levels, batchLevels) {
		maxLevel = max(maxLevel, level)
	}
	targets, err := buildTargets(splitList(*targetNames), targetSettings{
		workDir: *workDir, seckilld: *seckilldBinary, redis: *redisBinary, pgBinDir: *pgBinDir,
		pgPool: *pgPool, maxConns: maxLevel + 16, timeout: *timeout,
	})
	if err != nil {
		fmt.Fprintf(stderr, "compare: %v\n", err)
		return exitUsage
	}
	progressOut, terminal, err := bench.ProgressOutput(*progress, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "compare: %v\n", err)
		return exitUsage
	}
	if *cpuProfile != "" {
		stop, err := bench.StartCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "compare: %v\n", err)
			return exitUsage
		}
		defer stop()
	}
	report := Report{
		StartedAt:         time.Now(),
		Machine:           describeMachine(),
		Commit:            version.Commit(),
		LoadAverageBefore: bench.LoadAverage(),
		Options: map[string]string{
			"concurrency": *concurrencies, "engine_concurrency": *engineConcurrencies, "scenarios": *scenarios, "hot_duration": hotDuration.String(),
			"seed_requests": strconv.FormatInt(*seedRequests, 10), "seed_stock": strconv.FormatInt(*seedStock, 10),
			"repeat_share": fmt.Sprint(*repeatShare), "retry_share": fmt.Sprint(*retryShare), "pg_pool": strconv.Itoa(*pgPool),
			"rounds": strconv.Itoa(*rounds), "batch": strconv.Itoa(*batch), "batch_concurrency": *batchConcurrencies,
			"wrk_concurrency": *wrkConcurrencies,
		},
	}
	fmt.Fprintf(stdout, "seckill compare: %s; commit %s; load average %.2f\n", report.Machine, report.Commit, report.LoadAverageBefore)
	fmt.Fprintf(stdout, "hot %s per cell; seed %d attempts for %d units (repeat %.0f%%, retry %.0f%%); postgres pool %d\n",
		*hotDuration, *seedRequests, *seedStock, *repeatShare*100, *retryShare*100, *pgPool)
	if *rounds > 1 {
		fmt.Fprintf(stdout, "%d rounds, targets taking turns cell by cell; each cell below is its median round\n", *rounds)
	}
	if probe, err := ProbeFsync(*workDir); err == nil {
		report.Fsync = &probe
		fmt.Fprintf(stdout, "fsync probe (%s, %s): %.0f appends+fdatasync/s, p50 %.2f ms, p99 %.2f ms\n",
			*workDir, probe.Filesystem, probe.PerSecond, probe.P50MS, probe.P99MS)
	} else {
		fmt.Fprintf(stdout, "fsync probe failed: %v\n", err)
	}
	var wrk *WrkOptions
	if len(wrkLevels) > 0 {
		wrk = &WrkOptions{Binary: *wrkBinary, Concurrencies: wrkLevels, Threads: runtime.NumCPU(), Timeout: *timeout}
	}
	report.Rows, report.Rounds = RunMatrix(ctx, targets, MatrixOptions{
		Batch: *batch, BatchConcurrencies: batchLevels, Wrk: wrk,
		Concurrencies: levels, Extra: map[string][]int{"engine": engineLevels}, Scenarios: scenarioList, HotDuration: *hotDuration,
		SeedRequests: *seedRequests, SeedStock: *seedStock, SeedTimeout: *seedTimeout,
		RepeatShare: *repeatShare, RetryShare: *retryShare, MaxResends: 20, Seed: *seed, Pause: *pause, Rounds: *rounds,
		Progress: progressOut, Terminal: terminal,
	}, stderr)
	report.LoadAverageAfter = bench.LoadAverage()
	WriteTables(stdout, report.Rows, tableLevels(levels, slices.Concat(engineLevels, batchLevels, wrkLevels)))
	fmt.Fprintf(stdout, "load average %.2f before, %.2f after\n", report.LoadAverageBefore, report.LoadAverageAfter)
	for path, v := range map[string]any{*jsonPath: Cells(report.Rows), *reportPath: report} {
		if path == "" {
			continue
		}
		if err := writeJSON(path, v); err != nil {
			fmt.Fprintf(stderr, "compare: %v\n", err)
			return exitRunProblem
		}
	}
	if ctx.Err() != nil {
		// Said after the tables, where they are read: the cells missing
		// from them were never run, not skipped for a reason of their own.
		fmt.Fprintln(stdout, "interrupted: the tables hold the cells run before it (a cell cut short fails as incomplete or holds what it measured); the rest did not run")
		return exitRunProblem
	}
	for _, row := range report.Rows {
		if row.Skipped == "" && !row.Correct {
			return exitIncorrect
		}
	}
	return exitPass
}

// parseFlags parses args into flags; when ok is false the caller returns
// status: exitPass after -h (the usage is printed), exitUsage after a bad
// flag (the error is printed).
func parseFlags(flags *flag.FlagSet, args []string) (status int, ok bool) {
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitPass, false
		}
		return exitUsage, false
	}
	if flags.NArg() > 0 {
		// Flag parsing stops at the first argument that is no flag, so a
		// --help after it would otherwise be read as nothing at all.
		fmt.Fprintf(flags.Output(), "%s: unknown command or argument %q\n", flags.Name(), flags.Arg(0))
		return exitUsage, false
	}
	return 0, true
}

// targetSettings are the flags that shape targets.
type targetSettings struct {
	workDir, seckilld, redis, pgBinDir string
	pgPool, maxConns                   int
	timeout                            time.Duration
}

// buildTargets makes the named targets in the given order.
func buildTargets(names []string, settings targetSettings) ([]Target, error) {
	var targets []Target
	for _, name := range names {
		switch name {
		case "redis":
			targets = append(targets, NewRedisTarget(RedisOptions{Binary: settings.redis, WorkDir: settings.workDir, PoolSize: settings.maxConns}))
		case "postgres", "pg":
			targets = append(targets, NewPostgresTarget(PostgresOptions{BinDir: settings.pgBinDir, WorkDir: settings.workDir, PoolSize: settings.pgPool}))
		case "seckilld":
			targets = append(targets, NewSeckilldTarget(SeckilldOptions{Binary: settings.seckilld, WorkDir: settings.workDir, MaxConns: settings.maxConns, Timeout: settings.timeout}))
		case "seckilld-rs":
			targets = append(targets, NewReplicaSetTarget(SeckilldOptions{Binary: settings.seckilld, WorkDir: settings.workDir, MaxConns: settings.maxConns, Timeout: settings.timeout}))
		case "engine":
			targets = append(targets, NewEngineTarget(settings.workDir))
		case "null", "null-http":
			targets = append(targets, NewNullTarget(settings.workDir, settings.maxConns, settings.timeout, false))
		case "null-fsync":
			targets = append(targets, NewNullTarget(settings.workDir, settings.maxConns, settings.timeout, true))
		default:
			return nil, fmt.Errorf("unknown target %q", name)
		}
	}
	return targets, nil
}

// tableLevels is every concurrency that has a table, in order.
func tableLevels(levels, extra []int) []int {
	all := slices.Clone(levels)
	for _, level := range extra {
		if !slices.Contains(all, level) {
			all = append(all, level)
		}
	}
	slices.Sort(all)
	return all
}

func splitList(text string) []string {
	var items []string
	for _, item := range strings.Split(text, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}

func parseInts(text string) ([]int, error) {
	var values []int
	for _, item := range splitList(text) {
		value, err := strconv.Atoi(item)
		if err != nil || value < 1 || value > bench.MaxConcurrency {
			return nil, fmt.Errorf("%q is not a concurrency in [1, %d]", item, bench.MaxConcurrency)
		}
		values = append(values, value)
	}
	return values, nil
}

// describeMachine says where a comparison runs: OS, architecture, CPUs
// and the Go that built this program.
func describeMachine() string {
	return fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
}
