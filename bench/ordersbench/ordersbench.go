// Package ordersbench is make bench-orders: the seed sale end to end,
// seckilld → its feed → seckill-orders → PostgreSQL, then a reconciliation
// that must be clean. Every process is private to the run and listens on
// 127.0.0.1: a seckilld (--fsync always) and a PostgreSQL (fsync and
// synchronous_commit on, track_commit_timestamp on so that each event's
// commit time is known) in temporary directories, and the seckill-orders
// binary, started before the sale (it waits for its campaign). It prints the events per second committed into PostgreSQL and
// the lag from each event's decision in seckill to its commit (p50, p99,
// max), and the pace of a replay of the whole feed into an empty database
// once the sale is over (the consumer alone).
package ordersbench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seckill/seckill/bench"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/pgserver"
	"github.com/seckill/seckill/internal/version"
	"github.com/seckill/seckill/reconcile"
)

// Options sizes the run.
type Options struct {
	// Seckilld and Orders are the binaries (bin/seckilld, bin/seckill-orders).
	Seckilld, Orders string
	// Stock is the SKU's sale_limit; Attempts the buyers' clicks.
	Stock, Attempts int64
	// Concurrency is the load tool's closed loop.
	Concurrency int
	// Batch is seckill-orders' --batch.
	Batch int
	// WorkDir holds the servers' temporary directories.
	WorkDir string
	// Progress receives progress lines (nil: none).
	Progress io.Writer
}

// Report is the run's outcome.
type Report struct {
	// Commit is the commit this program was built from (version.Commit);
	// LoadAverageBefore and LoadAverageAfter the one-minute load averages
	// when the run began and ended (bench.LoadAverage): where the figures
	// were measured, as compare's report says.
	Commit            string  `json:"commit"`
	LoadAverageBefore float64 `json:"load_average_before"`
	LoadAverageAfter  float64 `json:"load_average_after"`
	CampaignID        string  `json:"campaign_id"`
	Stock             int64   `json:"stock"`
	Attempts          int64   `json:"attempts"`
	Sold              int64   `json:"sold"`
	SaleS             float64 `json:"sale_s"`
	SalePassed        bool    `json:"sale_passed"` // the load tool's own checks
	// Events committed into PostgreSQL, over the span from the first
	// commit to the last.
	Events       int64   `json:"events"`
	SpanS        float64 `json:"span_s"`
	EventsPerSec float64 `json:"events_per_s"`
	// Lag from an event's decision in seckill to its commit in PostgreSQL.
	LagP50MS float64 `json:"lag_p50_ms"`
	LagP99MS float64 `json:"lag_p99_ms"`
	LagMaxMS float64 `json:"lag_max_ms"`
	// The replay: the whole feed again into an empty database, after the
	// sale (the consumer's own pace).
	ReplayEvents       int64            `json:"replay_events"`
	ReplaySpanS        float64          `json:"replay_span_s"`
	ReplayEventsPerSec float64          `json:"replay_events_per_s"`
	Reconcile          reconcile.Report `json:"reconcile"`
	Passed             bool             `json:"passed"`
}

// Run runs the sale and measures it.
func Run(ctx context.Context, o Options) (Report, error) {
	progress := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "bench-orders: "+format+"\n", args...)
		}
	}
	pg, err := pgserver.Start(ctx, pgserver.Options{WorkDir: o.WorkDir, Settings: map[string]string{"track_commit_timestamp": "on", "shared_buffers": "256MB"}})
	if err != nil {
		return Report{}, err
	}
	defer pg.Close()
	if err := exec1(ctx, pg.URL("postgres"), "CREATE DATABASE orders"); err != nil {
		return Report{}, err
	}
	dbURL := pg.URL("orders")
	dir, err := os.MkdirTemp(o.WorkDir, "seckill-bench-orders-")
	if err != nil {
		return Report{}, err
	}
	defer os.RemoveAll(dir)
	token := "bench-orders-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	base, stopSeckilld, err := startSeckilld(ctx, o.Seckilld, dir, token)
	if err != nil {
		return Report{}, err
	}
	defer stopSeckilld()
	progress("seckilld on %s, PostgreSQL %s", base, dbURL)

	r := Report{CampaignID: "orders-" + strconv.FormatInt(time.Now().Unix(), 36), Stock: o.Stock, Attempts: o.Attempts,
		Commit: version.Commit(), LoadAverageBefore: bench.LoadAverage()}
	c, err := client.New(client.Options{BaseURL: base, AdminToken: token})
	if err != nil {
		return r, err
	}
	// seckill-orders runs before the sale, as in production: it waits
	// for its campaign, which the load tool defines.
	orders, serving, err := startOrders(o.Orders, dbURL, base, token, r.CampaignID, o.Batch, filepath.Join(dir, "seckill-orders.log"))
	if err != nil {
		return r, err
	}
	defer func() {
		orders.Process.Signal(syscall.SIGTERM)
		orders.Wait()
	}()
	select {
	case <-serving:
	case <-time.After(time.Minute):
		return r, errors.New("seckill-orders did not start within a minute")
	}

	config := bench.DefaultConfig(bench.ScenarioSeed)
	config.Target, config.AdminToken, config.CampaignID = base, token, r.CampaignID
	config.Stock, config.Requests = o.Stock, o.Attempts
	if o.Concurrency > 0 {
		config.Concurrency = o.Concurrency
	}
	progress("the seed sale: %d units, %d attempts", o.Stock, o.Attempts)
	result, err := bench.Run(ctx, config)
	if err != nil {
		return r, fmt.Errorf("the sale: %w", err)
	}
	r.Sold, r.SaleS, r.SalePassed = result.Accepted, result.ElapsedS, result.Passed

	progress("sold %d in %.1f s; waiting for the orders to reconcile clean", r.Sold, r.SaleS)
	if r.Reconcile, err = waitClean(ctx, c, dbURL, r.CampaignID); err != nil {
		return r, err
	}
	if err := measure(ctx, dbURL, &r); err != nil {
		return r, err
	}

	// The consumer alone: a second seckill-orders reads the whole feed
	// again into an empty database, with no sale competing for the cores.
	progress("replaying the feed into an empty database")
	if err := exec1(ctx, pg.URL("postgres"), "CREATE DATABASE replay"); err != nil {
		return r, err
	}
	replay, replayServing, err := startOrders(o.Orders, pg.URL("replay"), base, token, r.CampaignID, o.Batch, filepath.Join(dir, "replay.log"))
	if err != nil {
		return r, err
	}
	select {
	case <-replayServing: // its schema is there
	case <-time.After(time.Minute):
		replay.Process.Kill()
		replay.Wait()
		return r, errors.New("the replay's seckill-orders did not start within a minute")
	}
	replayed, err := waitClean(ctx, c, pg.URL("replay"), r.CampaignID)
	replay.Process.Signal(syscall.SIGTERM)
	replay.Wait()
	if err != nil {
		return r, err
	}
	var again Report
	if err := measure(ctx, pg.URL("replay"), &again); err != nil {
		return r, err
	}
	r.ReplayEvents, r.ReplaySpanS, r.ReplayEventsPerSec = again.Events, again.SpanS, again.EventsPerSec
	r.Passed = r.SalePassed && r.Reconcile.Clean && replayed.Clean && r.Sold == o.Stock
	r.LoadAverageAfter = bench.LoadAverage()
	return r, nil
}

// waitClean reconciles the orders at dbURL with the campaign (no lag)
// until clean, at most 5 minutes; the last report.
func waitClean(ctx context.Context, c *client.Client, dbURL, campaignID string) (reconcile.Report, error) {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		byID, err := reconcile.LoadOrders(ctx, dbURL, campaignID, "")
		if err != nil {
			return reconcile.Report{}, err
		}
		reservations, skus, err := reconcile.FromServer(ctx, c, campaignID, "")
		if err != nil {
			return reconcile.Report{}, err
		}
		r := reconcile.Compare(campaignID, "", reservations, skus, byID, 0, time.Now())
		if r.Clean || time.Now().After(deadline) || ctx.Err() != nil {
			return r, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// measure reads the events' commit times (track_commit_timestamp).
func measure(ctx context.Context, dbURL string, r *Report) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, `SELECT count(*), coalesce(extract(epoch FROM max(committed) - min(committed)), 0),
    coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY lag), 0), coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY lag), 0), coalesce(max(lag), 0)
FROM (SELECT pg_xact_commit_timestamp(xmin) AS committed,
             extract(epoch FROM pg_xact_commit_timestamp(xmin) - event_time) * 1000 AS lag FROM order_events) e`).
		Scan(&r.Events, &r.SpanS, &r.LagP50MS, &r.LagP99MS, &r.LagMaxMS); err != nil {
		return err
	}
	if r.SpanS > 0 {
		r.EventsPerSec = float64(r.Events) / r.SpanS
	}
	return nil
}

func exec1(ctx context.Context, url, sql string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// startSeckilld runs the seckilld binary on a free port with its data in
// dir, and returns once /readyz answers.
func startSeckilld(ctx context.Context, binary, dir, token string) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := l.Addr().String()
	l.Close()
	logFile, err := os.Create(filepath.Join(dir, "seckilld.log"))
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(binary, "--addr", addr, "--data-dir", filepath.Join(dir, "data"), "--admin-token", token, "--fsync", "always", "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return "", nil, fmt.Errorf("seckilld: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); logFile.Close(); close(exited) }()
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}
	base := "http://" + addr
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base, stop, nil
			}
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(filepath.Join(dir, "seckilld.log"))
			return "", nil, fmt.Errorf("seckilld exited at start: %s", b)
		default:
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			stop()
			return "", nil, errors.New("seckilld did not become ready within a minute")
		}
	}
}

// startOrders runs seckill-orders on the campaign's feed; serving is
// closed once its schema is migrated (it then reads the feed, or waits for
// the campaign).
func startOrders(binary, dbURL, base, token, campaignID string, batch int, logPath string) (*exec.Cmd, <-chan struct{}, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(binary, "--database", dbURL, "--feed", base, "--admin-token", token, "--campaign", campaignID,
		"--batch", strconv.Itoa(batch), "--metrics-addr", "127.0.0.1:0", "--log-level", "warn")
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, nil, fmt.Errorf("seckill-orders: %w", err)
	}
	serving := make(chan struct{})
	go func() {
		defer logFile.Close()
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			if strings.HasPrefix(lines.Text(), "seckill-orders metrics on ") {
				close(serving)
			}
		}
	}()
	return cmd, serving, nil
}

// Main is "seckill-bench orders": flags, the run, the report on stdout.
// Exit 0 passed, 1 a check failed (the sale, or the reconciliation), 2
// bad flags, 3 the run could not be carried out.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seckill-bench orders", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := Options{Progress: stderr}
	fs.StringVar(&o.Seckilld, "seckilld", "./bin/seckilld", "seckilld binary")
	fs.StringVar(&o.Orders, "seckill-orders", "./bin/seckill-orders", "seckill-orders binary")
	fs.Int64Var(&o.Stock, "stock", 10_000, "units of the SKU")
	fs.Int64Var(&o.Attempts, "attempts", 1_000_000, "the buyers' clicks")
	fs.IntVar(&o.Concurrency, "concurrency", 256, "the load tool's workers")
	fs.IntVar(&o.Batch, "batch", 500, "seckill-orders --batch: events per transaction at most")
	fs.StringVar(&o.WorkDir, "work-dir", os.TempDir(), "directory for the servers' temporary directories (a real disk: fsync is on)")
	jsonPath := fs.String("json", "", "write the report as JSON to this file")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil || fs.NArg() > 0 || o.Stock < 1 || o.Attempts < o.Stock || o.Batch < 1 || o.Batch > 1000 {
		fmt.Fprintln(stderr, "seckill-bench orders: bad flags (stock >= 1, attempts >= stock, batch 1..1000)")
		return 2
	}
	if err := bench.CheckOutputPaths(map[string]string{"json": *jsonPath}); err != nil {
		fmt.Fprintf(stderr, "seckill-bench orders: %v\n", err)
		return 2
	}
	r, err := Run(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "seckill-bench orders: %v\n", err)
		return 3
	}
	WriteReport(stdout, r)
	if *jsonPath != "" {
		b, _ := json.MarshalIndent(r, "", "  ")
		if err := os.WriteFile(*jsonPath, b, 0o644); err != nil {
			fmt.Fprintf(stderr, "seckill-bench orders: %v\n", err)
			return 3
		}
	}
	if !r.Passed {
		return 1
	}
	return 0
}

// commitRate says how fast events were committed. The span runs from the
// first commit to the last, so events that all committed at one instant
// (one transaction: a sale smaller than seckill-orders --batch) have no
// rate to give, rather than one of 0 events/s.
func commitRate(events int64, spanS, perSecond float64) string {
	if spanS <= 0 {
		return fmt.Sprintf("%d events committed at one instant: too few transactions for a rate", events)
	}
	return fmt.Sprintf("%d events committed over %.2f s: %.0f events/s", events, spanS, perSecond)
}

// WriteReport prints the figures and the verdict.
func WriteReport(w io.Writer, r Report) {
	fmt.Fprintf(w, "commit %s; load average %.2f before, %.2f after\n", r.Commit, r.LoadAverageBefore, r.LoadAverageAfter)
	fmt.Fprintf(w, "seed sale: %d of %d units sold in %.1f s over %d attempts (load tool's checks: %s)\n",
		r.Sold, r.Stock, r.SaleS, r.Attempts, passFail(r.SalePassed))
	fmt.Fprintf(w, "into PostgreSQL: %s\n", commitRate(r.Events, r.SpanS, r.EventsPerSec))
	fmt.Fprintf(w, "lag from decision in seckill to commit in PostgreSQL: p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
		r.LagP50MS, r.LagP99MS, r.LagMaxMS)
	fmt.Fprintf(w, "replay of the whole feed into an empty database after the sale: %s\n",
		commitRate(r.ReplayEvents, r.ReplaySpanS, r.ReplayEventsPerSec))
	fmt.Fprintf(w, "reconcile: %d reservations compared, %d differences: %s\n", r.Reconcile.Compared, len(r.Reconcile.Differences),
		map[bool]string{true: "clean", false: "NOT clean"}[r.Reconcile.Clean])
	for i, d := range r.Reconcile.Differences {
		if i == 10 {
			fmt.Fprintf(w, "  … %d more\n", len(r.Reconcile.Differences)-10)
			break
		}
		fmt.Fprintf(w, "  %s %s: seckill %s; orders %s\n", d.Kind, d.ReservationID, d.Seckill, d.Orders)
	}
	fmt.Fprintf(w, "bench-orders: %s\n", passFail(r.Passed))
}

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}
