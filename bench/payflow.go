package bench

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Payflow bounds and shares.
const (
	// payflowGrace is how long after the last expire_at the final states are read.
	payflowGrace = time.Second
	// payflowPollLimit bounds the wait for a past-due reservation to close.
	payflowPollLimit = 10 * time.Second
	// payflowRaceSpread: a racing payment is sent at expire_at plus an offset
	// drawn from [-spread, +spread].
	payflowRaceSpread  = 200 * time.Millisecond
	maxPayflowExamples = 20
)

// payAction is what the payflow does with one reservation.
type payAction uint8

const (
	actionPay       payAction = iota // pay at once
	actionPayRepeat                  // pay at once, then send the same payment again
	actionPayOther                   // pay at once, then a different payment id
	actionCancel                     // cancel at once
	actionExpire                     // do nothing, let it expire
	actionPayRacing                  // pay around expire_at
)

var actionNames = map[payAction]string{
	actionPay: "pay", actionPayRepeat: "pay+repeat", actionPayOther: "pay+conflicting",
	actionCancel: "cancel", actionExpire: "expire", actionPayRacing: "pay-racing-expiry",
}

// pickAction draws an action: 35% pay (a third repeat the payment, a third
// send a conflicting one), 20% cancel, 25% expire, 20% pay racing expiry.
func pickAction(rng *rand.Rand) payAction {
	draw := rng.Float64()
	switch {
	case draw < 0.35:
		return []payAction{actionPay, actionPayRepeat, actionPayOther}[rng.IntN(3)]
	case draw < 0.55:
		return actionCancel
	case draw < 0.80:
		return actionExpire
	}
	return actionPayRacing
}

// PayflowReport is what the payflow scenario saw after the reservations.
type PayflowReport struct {
	// Actions counts the planned action per reservation.
	Actions map[string]int64 `json:"actions"`
	// Paid counts reservations whose final state is PAID.
	Paid int64 `json:"paid"`
	// Closed counts reservations whose final state is CLOSED.
	Closed int64 `json:"closed"`
	// RefundRequired counts reservations closed with a payment to refund.
	RefundRequired int64 `json:"refund_required"`
	// RefundsListed counts distinct reservations on the refund list.
	RefundsListed int64 `json:"refunds_listed"`
	// RaceWonByPayment counts racing payments answered 200 PAID.
	RaceWonByPayment int64 `json:"race_won_by_payment"`
	// RaceWonByExpiry counts racing payments answered 409 REFUND_REQUIRED.
	RaceWonByExpiry int64 `json:"race_won_by_expiry"`
	// LatePayments counts immediate payments that still found the
	// reservation closed (the reserve phase outlasted the window).
	LatePayments int64 `json:"late_payments"`
	// Mismatches counts reservations (and audit figures) that contradict
	// the answers the calls got.
	Mismatches int64 `json:"mismatches"`
	// MismatchExamples lists a few of them.
	MismatchExamples []string `json:"mismatch_examples,omitempty"`
	// CallLatencyMS summarizes the latency of pay, cancel and status calls.
	CallLatencyMS map[string]LatencySummary `json:"call_latency_ms"`
}

// line is the summary's one-line view.
func (p *PayflowReport) line() string {
	return fmt.Sprintf("paid %d, closed %d, refund_required %d (listed %d), race won by payment %d / by expiry %d, late payments %d, mismatches %d",
		p.Paid, p.Closed, p.RefundRequired, p.RefundsListed, p.RaceWonByPayment, p.RaceWonByExpiry, p.LatePayments, p.Mismatches)
}

// payJob is one reservation's action and what its calls were answered.
type payJob struct {
	reservation AcceptedReservation
	action      payAction
	due         time.Time
	paymentID   string
	// answers, filled by the worker that runs the job
	firstStatus  int
	firstAnswer  StateAnswer
	secondStatus int
	secondAnswer StateAnswer
	callErr      error
}

// callTimer collects call latencies by call name.
type callTimer struct {
	mu    sync.Mutex
	calls map[string]*hdrhistogram.Histogram
}

func (t *callTimer) record(call string, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.calls == nil {
		t.calls = make(map[string]*hdrhistogram.Histogram)
	}
	if t.calls[call] == nil {
		t.calls[call] = newLatencyHistogram()
	}
	recordLatency(t.calls[call], d)
}

func (t *callTimer) summaries() map[string]LatencySummary {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]LatencySummary, len(t.calls))
	for call, h := range t.calls {
		out[call] = Summarize(h)
	}
	return out
}

// runPayflow reserves --requests units with a short payment window, then
// pays, cancels or lets each expire (some payments racing the expiry), and
// checks every final state, the refund list and the audit.
func runPayflow(ctx context.Context, config Config, client *Client) (*Result, error) {
	config.Duration = 0 // the plan bounds the reserve phase
	scenario := loadScenario{
		skus:   skuSpecs(1, config.Stock),
		plan:   PlanSpec{Attempts: config.Requests, Users: config.Users, SKUs: 1, Seed: config.Seed},
		resend: saleResend(config),
	}
	load, err := runLoadPhase(ctx, config, client, scenario)
	if err != nil {
		return nil, err
	}
	phase := &payflowPhase{config: config, client: client, sku: scenario.skus[0]}
	jobs := phase.plan(load.ledger.Accepted(), time.Now())
	refused := config.Requests - int64(len(jobs))
	switch soldOut := load.tally.SoldOut(0); {
	case refused == 0:
	case config.Cells.Enabled() && soldOut >= refused:
		// A celled SKU undersells by design: units granted to a cell
		// whose users were fewer stay there (docs/cells.md);
		// every request not accepted must then have been refused
		// SOLD_OUT, and the audit below still checks conservation.
		if config.Progress != nil {
			fmt.Fprintf(config.Progress, "[payflow] %d of %d requests refused SOLD_OUT: units stranded in cells whose users were fewer than their grants\n", refused, config.Requests)
		}
	default:
		phase.mismatch("reserve phase: %d of %d requests accepted, want all (requests <= stock)", len(jobs), config.Requests)
	}
	if config.Progress != nil {
		fmt.Fprintf(config.Progress, "[payflow] %d reservations: paying, cancelling, letting expire (window %s)\n", len(jobs), config.PaymentWindow)
	}
	phase.run(ctx, jobs)
	states := phase.waitAndRead(context.WithoutCancel(ctx), jobs)
	refundCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	refunds, err := client.Refunds(refundCtx, config.CampaignID, phase.sku.SKUID)
	if err != nil {
		phase.mismatch("refund list unreadable: %v", err)
	}
	phase.check(jobs, states, refunds)
	reused, examples := checkHandovers(load.report.TokenHandovers, states)
	load.result.TokenReused += reused
	load.result.Examples = append(load.result.Examples, examples...)
	load.audit(ctx, config, client)
	phase.checkAuditAfter(load.result.Audit)
	phase.report.CallLatencyMS = phase.timer.summaries()
	load.result.Payflow = &phase.report
	judge(load.result, expectations{}, load.report.AcceptedBySKU, scenario.skus, nil)
	return load.result, nil
}

// payflowPhase runs the actions on the reservations and reads the end state.
type payflowPhase struct {
	config Config
	client *Client
	sku    SKUSpec
	timer  callTimer
	report PayflowReport
}

func (p *payflowPhase) mismatch(format string, args ...any) {
	p.report.Mismatches++
	if len(p.report.MismatchExamples) < maxPayflowExamples {
		p.report.MismatchExamples = append(p.report.MismatchExamples, fmt.Sprintf(format, args...))
	}
}

// plan assigns an action and a due time to every reservation.
func (p *payflowPhase) plan(reservations []AcceptedReservation, now time.Time) []*payJob {
	sort.Slice(reservations, func(i, j int) bool { return reservations[i].Request < reservations[j].Request })
	rng := rand.New(rand.NewPCG(uint64(p.config.Seed), 0x9a7f10))
	jobs := make([]*payJob, len(reservations))
	p.report.Actions = make(map[string]int64)
	for i, reservation := range reservations {
		job := &payJob{reservation: reservation, action: pickAction(rng), due: now,
			paymentID: fmt.Sprintf("%s-pay-%d", p.config.CampaignID, reservation.Request)}
		if job.action == actionPayRacing {
			expireAt := reservation.ExpireAt
			if expireAt.IsZero() {
				expireAt = now.Add(p.config.PaymentWindow)
			}
			offset := time.Duration(rng.Int64N(int64(2*payflowRaceSpread))) - payflowRaceSpread
			job.due = expireAt.Add(offset)
		}
		p.report.Actions[actionNames[job.action]]++
		jobs[i] = job
	}
	sort.SliceStable(jobs, func(i, j int) bool { return jobs[i].due.Before(jobs[j].due) })
	return jobs
}

// run executes the jobs in due order with a bounded pool of workers.
func (p *payflowPhase) run(ctx context.Context, jobs []*payJob) {
	var next atomic.Int64
	var workers sync.WaitGroup
	clock := RealClock{}
	for range min(p.config.Concurrency, len(jobs)) {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for ctx.Err() == nil {
				index := next.Add(1) - 1
				if index >= int64(len(jobs)) {
					return
				}
				job := jobs[index]
				if !clock.SleepUntil(ctx, job.due) {
					return
				}
				p.execute(ctx, job)
			}
		}()
	}
	workers.Wait()
}

// execute makes a job's calls.
func (p *payflowPhase) execute(ctx context.Context, job *payJob) {
	id := job.reservation.ReservationID
	pay := func(paymentID string) (StateAnswer, int, error) {
		start := time.Now()
		answer, status, err := p.client.Pay(ctx, id, PaymentRequest{PaymentID: paymentID, Amount: 100, ReservationID: id})
		p.timer.record("pay", time.Since(start))
		return answer, status, err
	}
	switch job.action {
	case actionExpire:
		return
	case actionCancel:
		start := time.Now()
		job.firstAnswer, job.firstStatus, job.callErr = p.client.Cancel(ctx, id)
		p.timer.record("cancel", time.Since(start))
		return
	}
	job.firstAnswer, job.firstStatus, job.callErr = pay(job.paymentID)
	if job.callErr != nil {
		return
	}
	switch {
	case job.action == actionPayRepeat:
		job.secondAnswer, job.secondStatus, job.callErr = pay(job.paymentID)
	case job.action == actionPayOther && job.firstStatus == 200:
		job.secondAnswer, job.secondStatus, job.callErr = pay(job.paymentID + "-other")
	}
}

// waitAndRead waits until every reservation is past due, then reads each
// final state, polling (bounded) the ones still pending.
func (p *payflowPhase) waitAndRead(ctx context.Context, jobs []*payJob) map[string]ReservationStatus {
	latest := time.Now()
	for _, job := range jobs {
		if job.reservation.ExpireAt.After(latest) {
			latest = job.reservation.ExpireAt
		}
	}
	RealClock{}.SleepUntil(ctx, latest.Add(payflowGrace))
	states := make(map[string]ReservationStatus, len(jobs))
	var mu sync.Mutex
	var next atomic.Int64
	var workers sync.WaitGroup
	for range min(p.config.Concurrency, len(jobs)) {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for {
				index := next.Add(1) - 1
				if index >= int64(len(jobs)) {
					return
				}
				id := jobs[index].reservation.ReservationID
				state := p.readFinal(ctx, id)
				mu.Lock()
				states[id] = state
				mu.Unlock()
			}
		}()
	}
	workers.Wait()
	return states
}

// readFinal reads a reservation until it leaves PENDING_PAYMENT (bounded).
func (p *payflowPhase) readFinal(ctx context.Context, id string) ReservationStatus {
	deadline := time.Now().Add(payflowPollLimit)
	for {
		start := time.Now()
		status, code, err := p.client.Reservation(ctx, id)
		p.timer.record("status", time.Since(start))
		switch {
		case err != nil:
			status.Error = err.Error()
			return status
		case code != 200:
			status.Error = fmt.Sprintf("status %d %s", code, status.Error)
			return status
		case status.State != "PENDING_PAYMENT" || time.Now().After(deadline) || ctx.Err() != nil:
			return status
		}
		RealClock{}.SleepUntil(ctx, time.Now().Add(100*time.Millisecond))
	}
}

// check compares each final state with what the calls were answered.
func (p *payflowPhase) check(jobs []*payJob, states map[string]ReservationStatus, refunds []string) {
	listed := make(map[string]bool, len(refunds))
	for _, id := range refunds {
		listed[id] = true
	}
	p.report.RefundsListed = int64(len(listed))
	expectRefund := make(map[string]bool)
	for _, job := range jobs {
		id := job.reservation.ReservationID
		final := states[id]
		name := actionNames[job.action]
		if final.Error != "" {
			p.mismatch("%s (%s): final state unreadable: %s", id, name, final.Error)
			continue
		}
		switch final.State {
		case "PAID":
			p.report.Paid++
		case "CLOSED":
			p.report.Closed++
		default:
			p.mismatch("%s (%s): final state %q, want PAID or CLOSED", id, name, final.State)
		}
		if final.RefundRequired {
			p.report.RefundRequired++
		}
		if job.callErr != nil {
			p.mismatch("%s (%s): call failed: %v", id, name, job.callErr)
			continue
		}
		want, refund := p.expectedFinal(job)
		if refund {
			expectRefund[id] = true
		}
		if want != "" && final.State != want {
			p.mismatch("%s (%s): calls answered %d %s%s, final state %s", id, name, job.firstStatus, job.firstAnswer.State, job.firstAnswer.Error, final.State)
		}
		if final.RefundRequired != refund {
			p.mismatch("%s (%s): refund_required %v, want %v", id, name, final.RefundRequired, refund)
		}
	}
	for id := range expectRefund {
		if !listed[id] {
			p.mismatch("%s: a payment refused for refund (REFUND_REQUIRED or PAYMENT_CONFLICT) is not on the refund list", id)
		}
	}
	for id := range listed {
		if !expectRefund[id] {
			p.mismatch("%s: on the refund list, but no payment was refused for it", id)
		}
	}
}

// checkHandovers checks each token handed on after an expire_at against
// the final states: the earlier holder must have closed (not been paid) no
// later than the next one got the token. It returns how many did not, and a
// few examples. An unreadable final state is left to check's mismatches.
func checkHandovers(handovers []TokenHandover, states map[string]ReservationStatus) (int64, []string) {
	var reused int64
	var examples []string
	for _, h := range handovers {
		earlier := states[h.Earlier]
		if earlier.Error != "" {
			continue // unreadable: check already counts it as a mismatch
		}
		closedAt, err := ParseTime(earlier.ClosedAt)
		if earlier.State == "CLOSED" && err == nil && !closedAt.After(h.LaterCreatedAt) {
			continue
		}
		reused++
		if len(examples) < maxLedgerExamples {
			examples = append(examples, fmt.Sprintf("token_reused: sku %d token %s given to %s at %s while %s was %s (closed_at %q)",
				h.SKU, h.Token, h.Later, FormatTime(h.LaterCreatedAt), h.Earlier, cmp.Or(earlier.State, "unread"), earlier.ClosedAt))
		}
	}
	return reused, examples
}

// expectedFinal returns the final state a job's answers allow ("" when the
// answers alone do not decide it) and whether a refund must be pending.
func (p *payflowPhase) expectedFinal(job *payJob) (string, bool) {
	id := job.reservation.ReservationID
	name := actionNames[job.action]
	switch job.action {
	case actionExpire:
		return "CLOSED", false
	case actionCancel:
		if job.firstStatus != 200 || job.firstAnswer.State != "CLOSED" {
			p.mismatch("%s (%s): cancel answered %d %q%s, want 200 CLOSED", id, name, job.firstStatus, job.firstAnswer.State, job.firstAnswer.Error)
			return "", false
		}
		return "CLOSED", false
	}
	var want string
	var refund bool
	switch {
	case job.firstStatus == 200 && job.firstAnswer.State == "PAID":
		want = "PAID"
		if job.action == actionPayRacing {
			p.report.RaceWonByPayment++
		}
	case job.firstStatus == 409 && job.firstAnswer.Error == "REFUND_REQUIRED":
		want, refund = "CLOSED", true
		if job.action == actionPayRacing {
			p.report.RaceWonByExpiry++
		} else {
			p.report.LatePayments++
		}
	default:
		p.mismatch("%s (%s): payment answered %d %q%s, want 200 PAID or 409 REFUND_REQUIRED", id, name, job.firstStatus, job.firstAnswer.State, job.firstAnswer.Error)
		return "", false
	}
	switch job.action {
	case actionPayRepeat:
		if job.secondStatus != job.firstStatus || job.secondAnswer.State != job.firstAnswer.State || job.secondAnswer.Error != job.firstAnswer.Error {
			p.mismatch("%s (%s): same payment again answered %d %q%s, first %d %q%s", id, name,
				job.secondStatus, job.secondAnswer.State, job.secondAnswer.Error, job.firstStatus, job.firstAnswer.State, job.firstAnswer.Error)
		}
	case actionPayOther:
		// The second payment's money came in too: on a paid reservation
		// it is refused as PAYMENT_CONFLICT and recorded for refund.
		if want == "PAID" {
			refund = true
			if job.secondStatus != 409 || job.secondAnswer.Error != "PAYMENT_CONFLICT" {
				p.mismatch("%s (%s): a second payment id answered %d %q%s, want 409 PAYMENT_CONFLICT", id, name,
					job.secondStatus, job.secondAnswer.State, job.secondAnswer.Error)
			}
		}
	}
	return want, refund
}

// checkAuditAfter compares the audit with the final states: every unit is
// either paid (confirmed) or back in available; nothing stays reserved.
func (p *payflowPhase) checkAuditAfter(audit *AuditSummary) {
	if audit == nil || audit.Error != "" {
		return
	}
	if audit.Confirmed != p.report.Paid {
		p.mismatch("audit: confirmed %d, %d reservations ended PAID", audit.Confirmed, p.report.Paid)
	}
	if audit.Reserved != 0 {
		p.mismatch("audit: reserved %d after every payment window closed, want 0", audit.Reserved)
	}
	if audit.Available != p.sku.SaleLimit-p.report.Paid {
		p.mismatch("audit: available %d, want sale_limit %d - paid %d", audit.Available, p.sku.SaleLimit, p.report.Paid)
	}
	if paid, ok := audit.Counts["PAID"]; ok && paid != p.report.Paid {
		p.mismatch("audit: counts.PAID %d, %d reservations ended PAID", paid, p.report.Paid)
	}
}
