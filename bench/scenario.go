package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/seckill/seckill/entrypass"
)

// Campaign timing.
const (
	// campaignLead opens the many-skus campaign this far after it is defined,
	// so that every worker waits at the starting line.
	campaignLead = 3 * time.Second
	// campaignSlack keeps the campaign open well past the load.
	campaignSlack = time.Hour
)

// Run executes the configured scenario and returns its result with the
// verdict filled in. An error means the run could not be carried out (bad
// configuration, server unreachable), not that a check failed.
func Run(ctx context.Context, config Config) (*Result, error) {
	if err := config.Validate(); err != nil {
		return nil, err
	}
	var passes *entrypass.KeyRing
	if config.EntryPassKeys != "" {
		passes, _ = entrypass.ParseKeyRing(config.EntryPassKeys) // checked by Validate
	}
	client, err := NewClient(ClientOptions{
		Target:        config.Target,
		AdminToken:    config.AdminToken,
		PaymentSecret: config.PaymentSecret,
		MaxConns:      config.Concurrency + 16,
		Timeout:       config.Timeout,
		EntryPasses:   passes,
	})
	if err != nil {
		return nil, err
	}
	defer client.CloseIdle()
	if config.Cells.Enabled() {
		cc, err := newCellControl(config.Cells, client, config.AdminToken)
		if err != nil {
			return nil, err
		}
		defer cc.close()
		client.cells = cc
	}
	if config.CampaignID == "" {
		config.CampaignID = newCampaignID(config.Scenario)
	}
	ctx, cancel := context.WithTimeout(ctx, config.MaxTime)
	defer cancel()
	probe := beginEnvironment(config.ServerFlags, config.ServerPID)
	result, err := runScenario(ctx, config, client)
	if result != nil {
		env := probe.end()
		result.Environment = &env
	}
	if err == nil && ctx.Err() != nil {
		reason := "interrupted"
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			reason = fmt.Sprintf("stopped by --max-time %s", config.MaxTime)
		}
		result.Failures = append(result.Failures, reason+" before the load finished")
		result.Passed = false
	}
	return result, err
}

// runScenario dispatches to the scenario.
func runScenario(ctx context.Context, config Config, client *Client) (*Result, error) {
	switch config.Scenario {
	case ScenarioSeed:
		return runSeed(ctx, config, client)
	case ScenarioHot:
		return runHot(ctx, config, client)
	case ScenarioManySKUs:
		return runManySKUs(ctx, config, client)
	case ScenarioPayflow:
		return runPayflow(ctx, config, client)
	case ScenarioLottery:
		return runLottery(ctx, config, client)
	}
	return nil, fmt.Errorf("unknown scenario %q", config.Scenario)
}

// newCampaignID returns an id no earlier run used: scenario, time, random.
func newCampaignID(scenario string) string {
	var random [4]byte
	_, _ = rand.Read(random[:]) // crypto/rand never fails on Linux
	return fmt.Sprintf("bench-%s-%s-%s", strings.ReplaceAll(scenario, "-", ""), time.Now().UTC().Format("20060102t150405"), hex.EncodeToString(random[:]))
}

// campaignIDs returns the campaign of each SKU: one campaign, or, when there
// are more SKUs than SKUsPerCampaign, campaigns of that many SKUs sharing
// one start (a server may bound the admin body's size).
func campaignIDs(config Config, skus int) []string {
	ids := make([]string, skus)
	for i := range ids {
		ids[i] = config.CampaignID
		if config.SKUsPerCampaign > 0 && skus > config.SKUsPerCampaign {
			ids[i] = fmt.Sprintf("%s-p%03d", config.CampaignID, i/config.SKUsPerCampaign)
		}
	}
	return ids
}

// skuSpecs names count SKUs with the same sale limit.
func skuSpecs(count int, saleLimit int64) []SKUSpec {
	if count == 1 {
		return []SKUSpec{{SKUID: "sku-1", SaleLimit: saleLimit}}
	}
	width := len(fmt.Sprint(count))
	specs := make([]SKUSpec, count)
	for i := range specs {
		specs[i] = SKUSpec{SKUID: fmt.Sprintf("sku-%0*d", width, i+1), SaleLimit: saleLimit}
	}
	return specs
}

// loadScenario is a scenario made of one load phase and an audit.
type loadScenario struct {
	skus    []SKUSpec
	plan    PlanSpec
	resend  ResendPolicy
	opensAt time.Time // zero: open already
	expect  expectations
}

// loadPhase is a finished load: its result so far and what it recorded.
type loadPhase struct {
	scenario    loadScenario
	plan        *Plan
	campaignIDs []string // campaign of each SKU
	result      *Result
	tally       *Tally
	ledger      *Ledger
	report      LedgerReport
}

// runLoadScenario defines the campaign, runs the load, audits and judges.
func runLoadScenario(ctx context.Context, config Config, client *Client, scenario loadScenario) (*Result, error) {
	phase, err := runLoadPhase(ctx, config, client, scenario)
	if err != nil {
		return nil, err
	}
	phase.audit(ctx, config, client)
	judge(phase.result, scenario.expect, phase.report.AcceptedBySKU, scenario.skus, phase.plan.UsersBySKU())
	return phase.result, nil
}

// runLoadPhase defines the campaign and runs the load.
func runLoadPhase(ctx context.Context, config Config, client *Client, scenario loadScenario) (*loadPhase, error) {
	now := time.Now()
	startAt := now.Add(-2 * time.Second).Truncate(time.Second)
	if !scenario.opensAt.IsZero() {
		startAt = scenario.opensAt
	}
	campaignIDs := campaignIDs(config, len(scenario.skus))
	for first := 0; first < len(scenario.skus); {
		last := first
		for last < len(scenario.skus) && campaignIDs[last] == campaignIDs[first] {
			last++
		}
		campaign := CampaignSpec{
			CampaignID:     campaignIDs[first],
			StartAt:        FormatTime(startAt),
			EndAt:          FormatTime(now.Add(config.Duration + campaignSlack).Truncate(time.Second)),
			PaymentWindow:  config.PaymentWindow.String(),
			ReleaseOnClose: true,
			SKUs:           scenario.skus[first:last],
		}
		if config.EntryPassKeys != "" {
			campaign.EntryPass = &EntryPassSpec{Required: true}
		}
		if err := client.PutCampaign(ctx, campaign); err != nil {
			return nil, err
		}
		first = last
	}
	plan, err := NewPlan(scenario.plan)
	if err != nil {
		return nil, err
	}
	reservers := make([]Reserver, len(scenario.skus))
	for i, spec := range scenario.skus {
		reservers[i] = client.SKU(campaignIDs[i], spec.SKUID)
	}
	ledger := NewLedger(plan)
	if config.Cells.Enabled() {
		ledger.SoldOutNotFinal()
	}
	tally := NewTally(64, ledger, len(scenario.skus))
	monitor := StartMonitor(MonitorOptions{
		Tally: tally, Out: config.Progress, Terminal: config.Terminal, Label: config.Scenario,
		Total: plan.Len(), Duration: config.Duration, Units: ledger.Units,
	})
	stats, loadErr := RunLoad(ctx, LoadSpec{
		Plan:            plan,
		Reservers:       reservers,
		Concurrency:     config.Concurrency,
		Rate:            config.Rate,
		Duration:        config.Duration,
		StartAt:         scenario.opensAt,
		RequestIDPrefix: config.CampaignID,
		Resend:          scenario.resend,
		Batch:           config.Batch,
	}, tally)
	timeline := monitor.Stop()
	if loadErr != nil && ctx.Err() == nil {
		return nil, loadErr
	}
	result := newResult(config, scenario.skus)
	result.fillLoad(tally, stats, timeline)
	limits := make([]int64, len(scenario.skus))
	for i, spec := range scenario.skus {
		limits[i] = spec.SaleLimit
	}
	// The campaigns release tokens on close (above); the server keeps the
	// payment window in whole milliseconds.
	report := ledger.Check(len(scenario.skus), func(sku int) int64 { return limits[sku] }, config.PaymentWindow.Truncate(time.Millisecond))
	result.fillLedger(report)
	if last, ok := ledger.LastUnitAt(); ok && result.SaleLimit > 0 && result.Accepted >= result.SaleLimit {
		result.SoldOutAfterS = last.Sub(stats.Started).Seconds()
	}
	return &loadPhase{scenario: scenario, plan: plan, campaignIDs: campaignIDs, result: result, tally: tally, ledger: ledger, report: report}, nil
}

// audit reads every SKU's audit into the result, with the undersold count.
// It runs even when ctx was cancelled (bounded by its own timeout), so an
// interrupted run still reports the server's state.
func (p *loadPhase) audit(ctx context.Context, config Config, client *Client) []skuAudit {
	auditCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	audits := auditSKUs(auditCtx, client, p.campaignIDs, p.scenario.skus)
	p.result.Audit = summarizeAudits(p.scenario.skus, audits)
	p.result.Undersold = undersold(p.scenario.skus, audits, p.tally, p.report.AcceptedBySKU)
	return audits
}

// newResult starts a result with the run's description.
func newResult(config Config, skus []SKUSpec) *Result {
	result := &Result{
		Scenario:    config.Scenario,
		Target:      config.Target,
		CampaignID:  config.CampaignID,
		Campaigns:   len(distinct(campaignIDs(config, len(skus)))),
		Loop:        "closed",
		Concurrency: config.Concurrency,
		Batch:       config.Batch,
		Seed:        config.Seed,
		SKUs:        len(skus),
	}
	if config.Rate > 0 {
		result.Loop = "open"
		result.RateRPS = config.Rate
	}
	for _, spec := range skus {
		result.SaleLimit += spec.SaleLimit
	}
	return result
}

// saleResend is the resend policy of a sale that must complete: 429 waits
// for Retry-After, an unknown result is asked again with the same
// request_id, and with celled SKUs a SOLD_OUT that carries Retry-After (a
// cell waiting for its top-up: the unit may come within a second) is sent
// again after it, each bounded.
func saleResend(config Config) ResendPolicy {
	return ResendPolicy{
		QueueFull:         true,
		Uncertain:         true,
		SoldOutRetryAfter: config.Cells.Enabled(),
		MaxResends:        config.MaxResends,
		MinBackoff:        5 * time.Millisecond,
		MaxBackoff:        2 * time.Second,
	}
}

// runSeed: one SKU of --stock units, --requests attempts from --users users,
// with repeat clicks and retries; it must sell out exactly.
func runSeed(ctx context.Context, config Config, client *Client) (*Result, error) {
	users := config.Users
	if users == 0 {
		users = config.Requests
	}
	return runLoadScenario(ctx, config, client, loadScenario{
		skus: skuSpecs(1, config.Stock),
		plan: PlanSpec{Attempts: config.Requests, Users: users, SKUs: 1,
			RepeatShare: config.RepeatShare, RetryShare: config.RetryShare, Seed: config.Seed},
		resend: saleResend(config),
		expect: expectations{sellOut: true, noRelease: true},
	})
}

// runHot: one SKU that never sells out, load for --duration (or --requests).
func runHot(ctx context.Context, config Config, client *Client) (*Result, error) {
	return runLoadScenario(ctx, config, client, loadScenario{
		skus: skuSpecs(1, config.Stock),
		plan: PlanSpec{Attempts: config.Requests, Users: config.Users, SKUs: 1,
			RepeatShare: config.RepeatShare, RetryShare: config.RetryShare, Seed: config.Seed},
		expect: expectations{noRelease: true},
	})
}

// runManySKUs: --skus SKUs of --stock units, all opening at one instant a
// few seconds after the campaign is defined; each must sell out exactly
// (or, when users are spread too thin, sell one unit to each of its users).
func runManySKUs(ctx context.Context, config Config, client *Client) (*Result, error) {
	users := config.Users
	if users == 0 {
		users = config.Requests
	}
	return runLoadScenario(ctx, config, client, loadScenario{
		skus: skuSpecs(config.SKUs, config.Stock),
		plan: PlanSpec{Attempts: config.Requests, Users: users, SKUs: config.SKUs,
			RepeatShare: config.RepeatShare, RetryShare: config.RetryShare, Seed: config.Seed},
		resend:  saleResend(config),
		opensAt: time.Now().Add(campaignLead).Truncate(time.Second).Add(time.Second),
		expect:  expectations{sellOut: true, noRelease: true},
	})
}

// distinct returns the distinct values of ids, in order.
func distinct(ids []string) []string {
	var out []string
	for i, id := range ids {
		if i == 0 || id != ids[i-1] {
			out = append(out, id)
		}
	}
	return out
}
