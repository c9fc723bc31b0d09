package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// Result is the outcome of one run, written as JSON by --json. Counters
// named after an outcome count answers (resends included); Accepted counts
// units: distinct reservation ids accepted.
type Result struct {
	// Scenario is seed, hot, many-skus, payflow or lottery.
	Scenario string `json:"scenario"`
	// Target is the server's base URL.
	Target string `json:"target"`
	// CampaignID is the campaign the run defined (the prefix of their ids
	// when the SKUs were split over several campaigns).
	CampaignID string `json:"campaign_id"`
	// Campaigns is the number of campaigns defined.
	Campaigns int `json:"campaigns"`
	// Loop is "closed" (fixed concurrency) or "open" (fixed rate).
	Loop string `json:"loop"`
	// Concurrency is the number of workers.
	Concurrency int `json:"concurrency"`
	// Batch is the attempts per batch reserve (omitted: one request each).
	Batch int `json:"batch,omitempty"`
	// RateRPS is the open loop's arrival rate.
	RateRPS float64 `json:"rate_rps,omitempty"`
	// Seed made the plan.
	Seed int64 `json:"seed"`
	// StartedAt is when the load started.
	StartedAt time.Time `json:"started_at"`
	// ElapsedS is the load's duration in seconds.
	ElapsedS float64 `json:"elapsed_s"`
	// SKUs is the number of SKUs.
	SKUs int `json:"skus"`
	// SaleLimit is the sum of the SKUs' sale limits.
	SaleLimit int64 `json:"sale_limit"`
	// Attempts is the number of planned attempts that finished.
	Attempts int64 `json:"attempts"`
	// Requests is the number of requests sent, resends included.
	Requests int64 `json:"requests"`
	// Accepted is the number of distinct reservation ids accepted (units sold).
	Accepted int64 `json:"accepted"`
	// AcceptedResponses is the number of 202 answers, retries included.
	AcceptedResponses int64 `json:"accepted_responses"`
	// SoldOut is the number of 409 SOLD_OUT answers.
	SoldOut int64 `json:"sold_out"`
	// AlreadyPurchased is the number of 409 ALREADY_PURCHASED answers.
	AlreadyPurchased int64 `json:"already_purchased"`
	// QueueFull is the number of 429 QUEUE_FULL answers.
	QueueFull int64 `json:"queue_full"`
	// Errors is the number of requests without a usable answer.
	Errors int64 `json:"errors"`
	// Unanswered is the number of attempts whose last request got no
	// usable answer (an error not settled by a resend): what the server
	// did with them is unknown, and the run fails.
	Unanswered int64 `json:"unanswered"`
	// Outcomes counts every answer by outcome.
	Outcomes map[string]int64 `json:"outcomes"`
	// ErrorKinds lists the causes of Errors.
	ErrorKinds []ErrorKind `json:"error_kinds,omitempty"`
	// Oversold counts units accepted beyond a SKU's sale_limit.
	Oversold int64 `json:"oversold"`
	// DuplicateWinners counts users with more than one distinct accepted reservation.
	DuplicateWinners int64 `json:"duplicate_winners"`
	// Undersold counts units still available at the end of a SKU whose
	// requests were refused as SOLD_OUT.
	Undersold int64 `json:"undersold"`
	// TokenReused counts tokens handed to a reservation while another held
	// them (a token handed on after its holder closed, with
	// release_on_close, is not counted).
	TokenReused int64 `json:"token_reused"`
	// RetryMismatches counts request ids answered differently when resent.
	RetryMismatches int64 `json:"retry_mismatches"`
	// ThroughputRPS is Requests per elapsed second.
	ThroughputRPS float64 `json:"throughput_rps"`
	// LatencyMS summarizes every answer's latency.
	LatencyMS LatencySummary `json:"latency_ms"`
	// LatencyByOutcomeMS summarizes latency per outcome.
	LatencyByOutcomeMS map[string]LatencySummary `json:"latency_ms_by_outcome"`
	// LatencyCurvesMS is the latency distribution ("all" and per outcome).
	LatencyCurvesMS map[string][]PercentilePoint `json:"latency_curves_ms"`
	// Audit is what the server's audit endpoint said.
	Audit *AuditSummary `json:"audit"`
	// Payflow is the payflow scenario's own report.
	Payflow *PayflowReport `json:"payflow,omitempty"`
	// Lottery is the lottery scenario's own report.
	Lottery *LotteryReport `json:"lottery,omitempty"`
	// Timeline is the answers per second over the run.
	Timeline []TimelinePoint `json:"timeline"`
	// Examples lists a few offending ids behind failed checks.
	Examples []string `json:"examples,omitempty"`
	// Failures lists every failed check; empty when the run passed.
	Failures []string `json:"failures"`
	// Passed is true when Failures is empty.
	Passed bool `json:"passed"`
	// Environment is where and how the run was measured.
	Environment *Environment `json:"environment,omitempty"`
	// SoldOutAfterS is the time from the start of the load until the last
	// unit was accepted, in seconds, when every unit of sale_limit was
	// sold (0: not sold out).
	SoldOutAfterS float64 `json:"sold_out_after_s,omitempty"`
}

// AuditSummary is the audit of every SKU of the run, added up.
type AuditSummary struct {
	// OK is true when every SKU's audit was read and holds.
	OK bool `json:"ok"`
	// SaleLimit is the sum of the SKUs' sale limits as the server sees them.
	SaleLimit int64 `json:"sale_limit"`
	// Available is the sum of available units.
	Available int64 `json:"available"`
	// Reserved is the sum of reserved units.
	Reserved int64 `json:"reserved"`
	// Confirmed is the sum of confirmed (paid) units.
	Confirmed int64 `json:"confirmed"`
	// Violations lists the server's violations and the tool's own findings.
	Violations []string `json:"violations"`
	// Counts adds up the reservations per state.
	Counts map[string]int64 `json:"counts,omitempty"`
	// SKUsAudited is the number of SKUs whose audit was read.
	SKUsAudited int `json:"skus_audited"`
	// SKUsFailed is the number of SKUs whose audit did not hold.
	SKUsFailed int `json:"skus_failed"`
	// Error is set when an audit could not be read.
	Error string `json:"error,omitempty"`
}

// WriteJSON writes the result, indented, to path.
func (r *Result) WriteJSON(path string) error {
	body, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(body, '\n'), 0o644)
}

// fillLoad copies a load run's figures into the result.
func (r *Result) fillLoad(tally *Tally, stats LoadStats, timeline []TimelinePoint) {
	counts := tally.Counts()
	r.Outcomes = make(map[string]int64)
	for outcome, count := range counts {
		if count > 0 {
			r.Outcomes[Outcome(outcome).String()] = count
		}
		r.Requests += count
	}
	r.Attempts = tally.Attempts()
	r.AcceptedResponses = counts[OutcomeAccepted]
	r.SoldOut = counts[OutcomeSoldOut]
	r.AlreadyPurchased = counts[OutcomeAlreadyPurchased]
	r.QueueFull = counts[OutcomeQueueFull]
	r.Errors = counts[OutcomeError]
	r.Unanswered = tally.Unanswered()
	r.ErrorKinds = tally.ErrorKinds()
	r.StartedAt = stats.Started
	r.ElapsedS = stats.Elapsed.Seconds()
	if r.ElapsedS > 0 {
		r.ThroughputRPS = float64(r.Requests) / r.ElapsedS
	}
	latency := tally.Latency()
	r.LatencyMS = Summarize(latency.Overall)
	r.LatencyByOutcomeMS = latency.Summaries()
	r.LatencyCurvesMS = latency.Curves()
	r.Timeline = timeline
}

// fillLedger copies the ledger's findings into the result.
func (r *Result) fillLedger(report LedgerReport) {
	r.Accepted = report.Accepted
	r.Oversold = report.Oversold
	r.DuplicateWinners = report.DuplicateWinners
	r.TokenReused = report.TokenReused
	r.RetryMismatches = report.RetryMismatches + report.MissingReservationID
	r.Examples = append(r.Examples, report.Examples...)
}

// ReadResult reads a result written by WriteJSON.
func ReadResult(path string) (*Result, error) {
	body, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var result Result
	if err := json.Unmarshal(body, &result); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &result, nil
}
