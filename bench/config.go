package bench

import (
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/entrypass"
)

// Bounds of the flags that the server or the tool itself would refuse later.
const (
	// MaxCampaignIDLength leaves room in the 64-character ids the server
	// takes for the suffixes the tool adds (campaign parts "-p001",
	// request ids "<campaign>-<number>").
	MaxCampaignIDLength = 40
	// MaxRate bounds --rate (attempts per second).
	MaxRate = 10_000_000
)

// Scenario names.
const (
	// ScenarioSeed sells one SKU's stock to a crowd: 1,000,000 attempts for
	// 10,000 units, with repeat clicks and retries; it must sell exactly out.
	ScenarioSeed = "seed"
	// ScenarioHot hammers a SKU that never sells out, for throughput and latency.
	ScenarioHot = "hot"
	// ScenarioManySKUs opens 1,000 SKUs of 50 units at the same instant.
	ScenarioManySKUs = "many-skus"
	// ScenarioPayflow reserves, then pays, cancels or lets expire, with
	// payments racing the expiry, and checks every final state.
	ScenarioPayflow = "payflow"
	// ScenarioLottery runs a lottery sale (lottery.go): entrants enter, the
	// entries close, the draw, winners pay or let their reservations
	// expire, the waitlist takes the tokens back, and the auditor
	// recomputes the draw from the published evidence.
	ScenarioLottery = "lottery"
)

// Scenarios lists the scenario names.
var Scenarios = []string{ScenarioSeed, ScenarioHot, ScenarioManySKUs, ScenarioPayflow, ScenarioLottery}

// HotSaleLimit is the hot scenario's sale limit: more than any run can sell.
const HotSaleLimit = 1_000_000_000

// Config is one run of the tool.
type Config struct {
	// Target is the server's base URL (loopback only).
	Target string
	// AdminToken authorizes the admin calls.
	AdminToken string
	// PaymentSecret signs payments (payflow), when the server wants it.
	PaymentSecret string
	// EntryPassKeys, when set ("kid:hex,..." as seckilld's
	// --entry-pass-keys), makes every reserve carry an entry pass minted
	// with its first key, and the campaign require one.
	EntryPassKeys string
	// Scenario is one of Scenarios.
	Scenario string
	// Stock is each SKU's sale_limit.
	Stock int64
	// SKUs is the number of SKUs.
	SKUs int
	// SKUsPerCampaign splits the SKUs over campaigns of at most this many,
	// all opening together (0: one campaign), to keep each admin body small.
	SKUsPerCampaign int
	// Requests is the number of attempts (0 in hot: bounded by Duration).
	Requests int64
	// Users is the number of distinct users (0: one per fresh attempt).
	Users int64
	// Concurrency is the closed loop's workers, or the open loop's bound on
	// requests in flight.
	Concurrency int
	// Rate, when > 0, selects the open loop at that many attempts per second.
	Rate float64
	// Batch, when > 1, sends the attempts that many at a time through the
	// batch reserve (POST .../reservations:batch), as a gateway would
	// (0 or 1: one request per attempt).
	Batch int
	// Duration bounds the load phase (0: none, the plan bounds it).
	Duration time.Duration
	// MaxTime bounds the whole run, whatever happens (a server that stops
	// answering would otherwise stretch a request-bounded run for hours).
	MaxTime time.Duration
	// RepeatShare is the share of repeat clicks (same user, new request_id).
	RepeatShare float64
	// RetryShare is the share of retries (same request_id).
	RetryShare float64
	// PaymentWindow is the campaign's payment window.
	PaymentWindow time.Duration
	// Seed makes the plan and the payflow's choices reproducible.
	Seed int64
	// Timeout bounds one HTTP request.
	Timeout time.Duration
	// MaxResends bounds the resends of one attempt after 429, 504 or an error.
	MaxResends int
	// CampaignID overrides the generated campaign id (it must be new).
	CampaignID string
	// Progress receives the live progress (nil: none).
	Progress io.Writer
	// Terminal redraws the progress line in place.
	Terminal bool
	// ServerFlags are the server's flags, recorded in the result's
	// Environment (the client cannot read them).
	ServerFlags string
	// Cells, when enabled, makes the target a seckill-router and every
	// SKU celled (cells.go).
	Cells CellsConfig
	// ServerPID is the server's process id, when it runs on this machine:
	// its CPU time is then told apart from other processes' (0: unknown).
	ServerPID int
}

// DefaultConfig returns the defaults of a scenario.
func DefaultConfig(scenario string) Config {
	config := Config{
		Target:          "http://127.0.0.1:8080",
		Scenario:        scenario,
		Stock:           10_000,
		SKUs:            1,
		SKUsPerCampaign: 50,
		Requests:        1_000_000,
		Concurrency:     256,
		RepeatShare:     0.05,
		RetryShare:      0.05,
		PaymentWindow:   15 * time.Minute,
		Seed:            1,
		Timeout:         DefaultRequestTimeout,
		MaxTime:         30 * time.Minute,
		MaxResends:      20,
		Cells:           CellsConfig{Initial: -1, Chunk: 50},
	}
	switch scenario {
	case ScenarioHot:
		config.Stock = HotSaleLimit
		config.Requests = 0
		config.Duration = 10 * time.Second
		config.RepeatShare = 0
		config.RetryShare = 0
	case ScenarioManySKUs:
		config.SKUs = 1000
		config.Stock = 50
		config.Requests = 100_000
	case ScenarioLottery:
		config.Stock = 10_000
		config.Requests = 100_000 // entrants
		config.RetryShare = 0
		config.PaymentWindow = 5 * time.Second
		config.Duration = 60 * time.Second // the entry window
	case ScenarioPayflow:
		config.Stock = 1000
		config.Requests = 1000
		config.Concurrency = 64
		config.RepeatShare = 0
		config.RetryShare = 0
		config.PaymentWindow = 2 * time.Second
	}
	return config
}

// Validate checks the configuration's bounds.
func (c *Config) Validate() error {
	var problems []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			problems = append(problems, fmt.Errorf(format, args...))
		}
	}
	known := false
	for _, name := range Scenarios {
		known = known || name == c.Scenario
	}
	check(known, "scenario %q is not one of %v", c.Scenario, Scenarios)
	if err := CheckTarget(c.Target); err != nil {
		problems = append(problems, err)
	}
	check(c.Stock > 0 && c.Stock <= sku.MaxSaleLimit, "stock must be in [1, %d] (the server's bound on sale_limit)", sku.MaxSaleLimit)
	check(c.CampaignID == "" || (sku.ValidID(c.CampaignID) && len(c.CampaignID) <= MaxCampaignIDLength),
		"campaign must be 1-%d characters of [A-Za-z0-9._:-] (the server takes 64; the tool adds suffixes to it)", MaxCampaignIDLength)
	check(c.SKUs >= 1 && c.SKUs <= 100_000, "skus must be in [1, 100000]")
	check(c.Requests >= 0 && c.Requests <= MaxPlanAttempts, "requests must be in [0, %d]", MaxPlanAttempts)
	check(c.Requests != 0 || c.Duration != 0, "give --requests or --duration")
	check(c.Users >= 0, "users must be >= 0")
	check(c.SKUsPerCampaign >= 0, "skus-per-campaign must be >= 0")
	check(c.Concurrency >= 1 && c.Concurrency <= MaxConcurrency, "concurrency must be in [1, %d]", MaxConcurrency)
	check(c.Rate >= 0 && c.Rate <= MaxRate && !math.IsInf(c.Rate, 0), "rate must be in [0, %d]", MaxRate)
	// An attempt is due at start + i/rate: a rate below one attempt per
	// --max-time sends one attempt, and far below it the due time is
	// beyond what a time.Duration holds (it wraps to the past: every
	// attempt sent at once, its latency counted from a bogus time).
	check(!(c.Rate > 0) || 1/c.Rate <= c.MaxTime.Seconds(),
		"rate %g is one attempt every %.3g s, beyond --max-time %s: give 0 (the closed loop) or at least %.3g attempts per second",
		c.Rate, 1/c.Rate, c.MaxTime, 1/c.MaxTime.Seconds())
	check(c.Batch >= 0 && c.Batch <= MaxBatch, "batch must be in [0, %d]", MaxBatch)
	check(c.Duration >= 0 && c.Duration <= 24*time.Hour, "duration must be in [0, 24h]")
	check(c.RepeatShare >= 0 && c.RetryShare >= 0 && c.RepeatShare+c.RetryShare <= 1, "repeat and retry shares must be >= 0 and add up to at most 1")
	check(c.PaymentWindow >= time.Second, "payment window must be at least 1s")
	check(c.Timeout > 0, "timeout must be > 0")
	check(c.MaxTime > c.Duration && c.MaxTime <= 25*time.Hour, "max-time must exceed duration and be at most 25h")
	check(c.MaxResends >= 0 && c.MaxResends <= maxResendsLimit, "max resends must be in [0, %d]", maxResendsLimit)
	if c.EntryPassKeys != "" {
		if _, err := entrypass.ParseKeyRing(c.EntryPassKeys); err != nil {
			problems = append(problems, fmt.Errorf("entry-pass-keys: %w", err))
		}
	}
	problems = append(problems, c.Cells.validate(c)...)
	if c.Scenario == ScenarioPayflow {
		check(c.Requests > 0 && c.Requests <= 100_000, "payflow needs requests in [1, 100000]")
		check(c.Requests <= c.Stock*int64(c.SKUs), "payflow needs requests <= stock, so that every reservation is accepted")
		check(c.SKUs == 1, "payflow uses one SKU")
		check(c.PaymentWindow <= time.Minute, "payflow waits out the payment window: keep it within 1m")
	}
	return errors.Join(problems...)
}
