package compare

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/bench"
	"github.com/seckill/seckill/entrypass"
)

// The two arms of the entry-pass comparison.
const (
	// ArmPlain reserves without a pass on a campaign that requires none.
	ArmPlain = "plain"
	// ArmPass reserves with a pass the load tool mints, on a campaign with
	// entry_pass.required.
	ArmPass = "pass"
)

// Bounds of the entry-pass comparison.
const (
	// MaxPassPairs bounds PassOptions.Pairs and PassOptions.Warmup.
	MaxPassPairs = 50
	// passKeyID is the id of the run's random signing key.
	passKeyID = 1
)

// PassOptions sizes the entry-pass comparison, whose target is reserve
// throughput with passes within 10% of without, in the same run.
type PassOptions struct {
	// Pairs is the number of counted pairs of rounds (one plain, one pass).
	Pairs int
	// Warmup is the number of pairs run first and left out of the ratios
	// (connections, the log's first segment, the Go runtime's heap).
	Warmup int
	// Attempts is each round's number of reserves: one fresh user and
	// request_id each, none resent.
	Attempts int64
	// Concurrency is the closed loop's number of workers.
	Concurrency int
	// RoundTimeout bounds one round.
	RoundTimeout time.Duration
	// Pause separates rounds, so a background flush does not fall into the
	// next round.
	Pause time.Duration
	// Seed makes the plan reproducible.
	Seed int64
	// QuietCores is how much of a core other processes may have used
	// during both rounds of a pair (OtherCPUS over the round's time) for
	// the pair to count as quiet; QuietMedian* are over the quiet pairs.
	QuietCores float64
	// Progress receives progress lines (nil: none); Terminal redraws in place.
	Progress io.Writer
	// Terminal redraws the progress line in place.
	Terminal bool
}

// PassRound is one round of one arm: Attempts reserves on a new campaign.
type PassRound struct {
	// Pair numbers the pair, from 1; warm-up pairs count from -Warmup+1 to 0.
	Pair int `json:"pair"`
	// Arm is ArmPlain or ArmPass.
	Arm string `json:"arm"`
	// CampaignID is the round's campaign.
	CampaignID string `json:"campaign_id"`
	// Attempts is the number of reserves planned.
	Attempts int64 `json:"attempts"`
	// Requests counts the answers (and errors): Attempts when none is missing.
	Requests int64 `json:"requests"`
	// Answered202 counts the 202 answers.
	Answered202 int64 `json:"answered_202"`
	// Accepted counts the distinct reservations the clients were given.
	Accepted int64 `json:"accepted"`
	// Sold is reserved + confirmed in the server's audit after the round.
	Sold int64 `json:"sold"`
	// ElapsedS is the round's load time.
	ElapsedS float64 `json:"elapsed_s"`
	// ThroughputRPS is Requests per second.
	ThroughputRPS float64 `json:"throughput_rps"`
	// P50MS and P99MS are latency percentiles over every answer.
	P50MS float64 `json:"p50_ms"`
	P99MS float64 `json:"p99_ms"`
	// ServerCPUS is seckilld's CPU seconds during the round (/proc; -1:
	// unreadable).
	ServerCPUS float64 `json:"server_cpu_s"`
	// ServerCPUPerReserveUS is ServerCPUS per request, in µs.
	ServerCPUPerReserveUS float64 `json:"server_cpu_us_per_reserve"`
	// ClientCPUPerReserveUS is the load tool's CPU per request, in µs
	// (minting the pass is the client's).
	ClientCPUPerReserveUS float64 `json:"client_cpu_us_per_reserve"`
	// OtherCPUS is the CPU seconds the rest of the machine used during the
	// round (busy time from /proc/stat less server and client; -1:
	// unreadable): other work competing with the round.
	OtherCPUS float64 `json:"other_cpu_s"`
	// Correct is the round's verdict: every reserve answered 202 and the
	// server holds exactly Attempts units sold.
	Correct bool `json:"correct"`
	// Verdict says it in words.
	Verdict string `json:"verdict"`
}

// PassPair is one counted pair's ratios, pass over plain.
type PassPair struct {
	// Pair numbers the pair, from 1.
	Pair int `json:"pair"`
	// ThroughputRatio is the pass round's req/s over the plain round's.
	ThroughputRatio float64 `json:"throughput_ratio"`
	// ServerCPURatio is the pass round's server CPU per reserve over the
	// plain round's (0: unreadable).
	ServerCPURatio float64 `json:"server_cpu_ratio"`
	// ClientCPURatio is the same for the load tool's CPU.
	ClientCPURatio float64 `json:"client_cpu_ratio"`
	// Quiet holds when other processes used at most QuietCores during
	// each of the pair's rounds.
	Quiet bool `json:"quiet"`
}

// PassReport is the entry-pass comparison's result.
type PassReport struct {
	// StartedAt is when the run began.
	StartedAt time.Time `json:"started_at"`
	// Machine describes where it ran.
	Machine string `json:"machine"`
	// Commit is the commit this program was built from (version.Commit).
	Commit string `json:"commit"`
	// LoadAverageBefore and LoadAverageAfter are /proc/loadavg's first
	// figure around the run (-1: unreadable).
	LoadAverageBefore float64 `json:"load_average_before"`
	LoadAverageAfter  float64 `json:"load_average_after"`
	// Options are the sizes used.
	Options map[string]string `json:"options"`
	// Rounds are every round, warm-up included, in the order they ran.
	Rounds []PassRound `json:"rounds"`
	// Pairs are the counted pairs' ratios.
	Pairs []PassPair `json:"pairs"`
	// MedianThroughputRatio, MedianServerCPURatio and MedianClientCPURatio
	// are the medians of the pairs' ratios (0 without pairs).
	MedianThroughputRatio float64 `json:"median_throughput_ratio"`
	MedianServerCPURatio  float64 `json:"median_server_cpu_ratio"`
	MedianClientCPURatio  float64 `json:"median_client_cpu_ratio"`
	// QuietPairs counts the quiet pairs; the QuietMedian* figures are the
	// medians over them alone (0 without any).
	QuietPairs                 int     `json:"quiet_pairs"`
	QuietMedianThroughputRatio float64 `json:"quiet_median_throughput_ratio"`
	QuietMedianServerCPURatio  float64 `json:"quiet_median_server_cpu_ratio"`
	QuietMedianClientCPURatio  float64 `json:"quiet_median_client_cpu_ratio"`
	// Correct holds when every round was.
	Correct bool `json:"correct"`
}

// passArms are a run's two ways to reserve on the same server.
type passArms struct {
	server       *SeckilldTarget
	plain, pass  *bench.Client
	window       time.Duration
	plan         *bench.Plan
	options      PassOptions
	campaignBase string
}

// RunPasses starts one seckilld (server's options, fsync always) with a
// random entry-pass key, and runs the pairs of rounds: each round defines a
// new campaign of one SKU that never sells out and sends it Attempts
// reserves through the load tool's HTTP client and driver; the pass arm's
// campaign has entry_pass.required and its client mints every pass with
// the key, as seckill-bench --entry-pass-keys does. The arm that goes first
// swaps from pair to pair (odd pairs plain first, even pairs pass first:
// plain, pass, pass, plain, ...), so that a machine whose speed drifts
// weighs on both arms alike. Each round's
// server CPU comes from /proc, the client's from getrusage.
//
// It returns an error when the server cannot start or a campaign cannot be
// defined; a round that sold wrongly is reported in its verdict.
func RunPasses(ctx context.Context, server SeckilldOptions, options PassOptions, log io.Writer) (PassReport, error) {
	if err := options.validate(); err != nil {
		return PassReport{}, err
	}
	keys, err := randomPassKeys()
	if err != nil {
		return PassReport{}, err
	}
	ring, err := entrypass.ParseKeyRing(keys)
	if err != nil {
		return PassReport{}, err
	}
	server.EntryPassKeys = keys
	target := NewSeckilldTarget(server)
	defer func() {
		if err := target.Close(); err != nil {
			fmt.Fprintf(log, "seckilld: stop: %v\n", err)
		}
	}()
	if err := target.Start(ctx); err != nil {
		return PassReport{}, fmt.Errorf("seckilld: %w", err)
	}
	passClient, err := bench.NewClient(bench.ClientOptions{
		Target: target.base, AdminToken: target.token, MaxConns: server.MaxConns, Timeout: server.Timeout, EntryPasses: ring,
	})
	if err != nil {
		return PassReport{}, err
	}
	defer passClient.CloseIdle()
	plan, err := bench.NewPlan(bench.PlanSpec{Attempts: options.Attempts, Seed: options.Seed})
	if err != nil {
		return PassReport{}, err
	}
	arms := &passArms{server: target, plain: target.client, pass: passClient, window: target.options.PaymentWindow,
		plan: plan, options: options, campaignBase: "passes-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	report := PassReport{Correct: true}
	for pair := 1 - options.Warmup; pair <= options.Pairs; pair++ {
		order := [2]string{ArmPlain, ArmPass} // odd pairs
		if pair%2 == 0 {
			order = [2]string{ArmPass, ArmPlain}
		}
		for _, arm := range order {
			if err := ctx.Err(); err != nil {
				return report, err
			}
			round, err := arms.run(ctx, pair, arm)
			if err != nil {
				return report, err
			}
			fmt.Fprintf(log, "%s: %s\n", roundName(round), roundSummary(round))
			report.Rounds = append(report.Rounds, round)
			report.Correct = report.Correct && round.Correct
			bench.RealClock{}.SleepUntil(ctx, time.Now().Add(options.Pause))
		}
	}
	report.summarize(options.QuietCores)
	return report, nil
}

// validate checks the options' bounds.
func (o PassOptions) validate() error {
	switch {
	case o.Pairs < 1 || o.Pairs > MaxPassPairs || o.Warmup < 0 || o.Warmup > MaxPassPairs:
		return fmt.Errorf("passes: pairs must be in [1, %d], warm-up pairs in [0, %d]", MaxPassPairs, MaxPassPairs)
	case o.Attempts < 1 || o.Attempts > bench.MaxPlanAttempts:
		return fmt.Errorf("passes: attempts per round must be in [1, %d]", bench.MaxPlanAttempts)
	case o.Concurrency < 1 || o.Concurrency > bench.MaxConcurrency:
		return fmt.Errorf("passes: concurrency must be in [1, %d]", bench.MaxConcurrency)
	case o.RoundTimeout <= 0 || o.RoundTimeout > maxCellDuration:
		return fmt.Errorf("passes: the round timeout must be in (0, %s]", maxCellDuration)
	case o.Pause < 0 || o.QuietCores < 0:
		return errors.New("passes: negative pause or quiet share")
	}
	return nil
}

// randomPassKeys returns a ring of one fresh random key, in the
// --entry-pass-keys form: the run's passes are worth nothing after it.
func randomPassKeys() (string, error) {
	secret := make([]byte, entrypass.MinSecretSize)
	if _, err := rand.Read(secret); err != nil {
		return "", err
	}
	return strconv.Itoa(passKeyID) + ":" + hex.EncodeToString(secret), nil
}

// run runs one round of arm: a new campaign, a probe (pass arm: a reserve
// without a pass must be refused), the load, the audit.
func (a *passArms) run(ctx context.Context, pair int, arm string) (PassRound, error) {
	round := PassRound{Pair: pair, Arm: arm, Attempts: a.options.Attempts, ServerCPUS: -1, OtherCPUS: -1,
		CampaignID: fmt.Sprintf("%s-%d-%s", a.campaignBase, pair+a.options.Warmup, arm)}
	sku := SKURef{CampaignID: round.CampaignID, SKUID: "sku-1", SaleLimit: bench.HotSaleLimit}
	client, entryPass := a.plain, (*bench.EntryPassSpec)(nil)
	if arm == ArmPass {
		client, entryPass = a.pass, &bench.EntryPassSpec{Required: true}
	}
	reserver, err := prepareHTTP(ctx, client, sku, a.window, entryPass)
	if err != nil {
		return round, err
	}
	if arm == ArmPass {
		if err := probePassRequired(ctx, a.plain.SKU(sku.CampaignID, sku.SKUID)); err != nil {
			return round, err
		}
	}
	ledger := bench.NewLedger(a.plan)
	tally := bench.NewTally(64, ledger, 1)
	monitor := bench.StartMonitor(bench.MonitorOptions{Tally: tally, Out: a.options.Progress, Terminal: a.options.Terminal,
		Label: roundName(round), Total: a.plan.Len(), Duration: a.options.RoundTimeout})
	machineBefore, machineKnown := machineBusyCPU()
	serverBefore, serverKnown := a.server.ServerCPU()
	clientBefore := selfCPU()
	stats, _ := bench.RunLoad(ctx, bench.LoadSpec{Plan: a.plan, Reservers: []bench.Reserver{reserver},
		Concurrency: a.options.Concurrency, Duration: a.options.RoundTimeout, RequestIDPrefix: sku.CampaignID}, tally)
	clientAfter := selfCPU()
	serverAfter, serverKnownAfter := a.server.ServerCPU()
	machineAfter, machineKnownAfter := machineBusyCPU()
	monitor.Stop()
	counts := tally.Counts()
	round.Requests = tally.Sent()
	round.Answered202 = counts[bench.OutcomeAccepted]
	round.ElapsedS = stats.Elapsed.Seconds()
	if round.ElapsedS > 0 {
		round.ThroughputRPS = float64(round.Requests) / round.ElapsedS
	}
	if round.Requests > 0 {
		if serverKnown && serverKnownAfter {
			round.ServerCPUS = (serverAfter - serverBefore).Seconds()
			round.ServerCPUPerReserveUS = round.ServerCPUS * 1e6 / float64(round.Requests)
		}
		round.ClientCPUPerReserveUS = (clientAfter - clientBefore).Seconds() * 1e6 / float64(round.Requests)
	}
	if machineKnown && machineKnownAfter && round.ServerCPUS >= 0 {
		round.OtherCPUS = max((machineAfter-machineBefore).Seconds()-round.ServerCPUS-(clientAfter-clientBefore).Seconds(), 0)
	}
	latency := bench.Summarize(tally.Latency().Overall)
	round.P50MS, round.P99MS = latency.P50, latency.P99
	round.Accepted = ledger.Check(1, func(int) int64 { return sku.SaleLimit }, 0).Accepted
	auditCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	audit, err := a.server.Audit(auditCtx, sku)
	if err != nil {
		round.Verdict = "FAIL: audit: " + err.Error()
		return round, nil
	}
	round.Sold = audit.Sold
	round.Correct, round.Verdict = judgePassRound(round, audit, tally.ErrorKinds())
	return round, nil
}

// probePassRequired checks that the pass arm's campaign refuses a reserve
// without a pass (403 ENTRY_PASS_REQUIRED, not recorded): otherwise the
// server would not be checking the passes the arm sends.
func probePassRequired(ctx context.Context, plain bench.Reserver) error {
	reply, err := plain.Reserve(ctx, "probe-without-pass", "probe")
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	if reply.Outcome != bench.OutcomeError || !strings.Contains(reply.Detail, "ENTRY_PASS_REQUIRED") {
		return fmt.Errorf("probe: a reserve without a pass on a campaign that requires one got %s %s, want 403 ENTRY_PASS_REQUIRED (is the server started with --entry-pass-keys?)",
			reply.Outcome, reply.Detail)
	}
	return nil
}

// judgePassRound decides whether a round was sold as planned: one answer
// per attempt, every one 202 with a reservation of its own, and the
// server's audit holding exactly those units.
func judgePassRound(round PassRound, audit Audit, errorKinds []bench.ErrorKind) (bool, string) {
	var problems []string
	if round.Requests != round.Attempts || round.Answered202 != round.Attempts {
		problems = append(problems, fmt.Sprintf("%d answers to %d attempts, %d of them 202", round.Requests, round.Attempts, round.Answered202))
	}
	if len(errorKinds) > 0 {
		problems = append(problems, fmt.Sprintf("errors %v", errorKinds))
	}
	if round.Accepted != round.Attempts {
		problems = append(problems, fmt.Sprintf("%d distinct reservations for %d attempts", round.Accepted, round.Attempts))
	}
	if !audit.Consistent {
		problems = append(problems, "audit: "+audit.Detail)
	}
	if audit.Sold != round.Attempts {
		problems = append(problems, fmt.Sprintf("the server holds %d sold, want %d", audit.Sold, round.Attempts))
	}
	if len(problems) > 0 {
		return false, "FAIL: " + strings.Join(problems, "; ")
	}
	return true, fmt.Sprintf("ok: %d reserves, all 202, %d sold", round.Attempts, audit.Sold)
}

// summarize pairs the rounds and takes the medians of all pairs and of the
// quiet ones.
func (r *PassReport) summarize(quietCores float64) {
	r.Pairs = passPairs(r.Rounds, quietCores)
	r.MedianThroughputRatio, r.MedianServerCPURatio, r.MedianClientCPURatio = pairMedians(r.Pairs)
	var quiet []PassPair
	for _, pair := range r.Pairs {
		if pair.Quiet {
			quiet = append(quiet, pair)
		}
	}
	r.QuietPairs = len(quiet)
	r.QuietMedianThroughputRatio, r.QuietMedianServerCPURatio, r.QuietMedianClientCPURatio = pairMedians(quiet)
}

// quietRound reports whether other processes used at most quietCores of
// CPU during the round (an unreadable figure is not quiet).
func quietRound(round PassRound, quietCores float64) bool {
	return round.OtherCPUS >= 0 && round.ElapsedS > 0 && round.OtherCPUS/round.ElapsedS <= quietCores
}

// passPairs pairs each counted pair's plain and pass rounds and computes
// their ratios; warm-up pairs (Pair <= 0) and incomplete pairs are left out.
func passPairs(rounds []PassRound, quietCores float64) []PassPair {
	byPair := map[int]map[string]PassRound{}
	var order []int
	for _, round := range rounds {
		if round.Pair < 1 {
			continue
		}
		if byPair[round.Pair] == nil {
			byPair[round.Pair] = map[string]PassRound{}
			order = append(order, round.Pair)
		}
		byPair[round.Pair][round.Arm] = round
	}
	var pairs []PassPair
	for _, number := range order {
		plain, okPlain := byPair[number][ArmPlain]
		pass, okPass := byPair[number][ArmPass]
		if !okPlain || !okPass {
			continue
		}
		pairs = append(pairs, PassPair{Pair: number,
			ThroughputRatio: ratio(pass.ThroughputRPS, plain.ThroughputRPS),
			ServerCPURatio:  ratio(pass.ServerCPUPerReserveUS, plain.ServerCPUPerReserveUS),
			ClientCPURatio:  ratio(pass.ClientCPUPerReserveUS, plain.ClientCPUPerReserveUS),
			Quiet:           quietRound(plain, quietCores) && quietRound(pass, quietCores),
		})
	}
	return pairs
}

// ratio is a / b, or 0 when either is not a positive figure.
func ratio(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	return a / b
}

// pairMedians returns the medians of the pairs' three ratios.
func pairMedians(pairs []PassPair) (throughput, serverCPU, clientCPU float64) {
	pick := func(get func(PassPair) float64) float64 {
		values := make([]float64, 0, len(pairs))
		for _, pair := range pairs {
			if value := get(pair); value > 0 {
				values = append(values, value)
			}
		}
		return median(values)
	}
	return pick(func(p PassPair) float64 { return p.ThroughputRatio }),
		pick(func(p PassPair) float64 { return p.ServerCPURatio }),
		pick(func(p PassPair) float64 { return p.ClientCPURatio })
}

// median is the middle value (the mean of the two middle ones for an even
// count), 0 for none.
func median(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	sorted := slices.Clone(values)
	slices.SortFunc(sorted, cmp.Compare[float64])
	middle := len(sorted) / 2
	if len(sorted)%2 == 1 {
		return sorted[middle]
	}
	return (sorted[middle-1] + sorted[middle]) / 2
}

// roundName labels a round in progress lines: "pair 2 pass", "warm-up 0 plain".
func roundName(round PassRound) string {
	if round.Pair < 1 {
		return fmt.Sprintf("warm-up %d %s", round.Pair, round.Arm)
	}
	return fmt.Sprintf("pair %d %s", round.Pair, round.Arm)
}

// roundSummary is a round's one-line result.
func roundSummary(round PassRound) string {
	return fmt.Sprintf("%.0f req/s, p50 %.2f ms, p99 %.2f ms, server %.1f µs/reserve, client %.1f µs/reserve, other processes %.2f CPU s, %s",
		round.ThroughputRPS, round.P50MS, round.P99MS, round.ServerCPUPerReserveUS, round.ClientCPUPerReserveUS, round.OtherCPUS, round.Verdict)
}
