package bench

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/lottery"
)

// The lottery scenario: config.Requests entrants (one in twenty entering
// twice, under a second request_id: the same entry must come back) enter a
// lottery SKU of config.Stock units with a waitlist of as many, within an
// entry window of config.Duration; once the beacon round named after the
// close is due, the tool draws (seckilld cannot reach the beacon and
// neither does the tool: the randomness is SHA-256 of the campaign id, a
// stand-in for the round's published value); winners pay, all but one in
// ten, whose reservations expire after config.PaymentWindow; the first
// waitlisted entrants must then hold those tokens, and pay; finally the
// auditor (lottery.Verify) recomputes the draw from the published evidence
// and the exported pool, and the server's audit must count the units paid.

// LotteryReport is the lottery scenario's own report.
type LotteryReport struct {
	Entrants        int64          `json:"entrants"`
	Entered         int64          `json:"entered"`
	RepeatsSame     int64          `json:"repeats_same_entry"`
	EntryOutcomes   map[string]int `json:"entry_outcomes"`
	EnterS          float64        `json:"enter_s"`
	EntriesPerS     float64        `json:"entries_per_s"`
	Winners         int            `json:"winners"`
	Waitlisted      int            `json:"waitlisted"`
	DrawS           float64        `json:"draw_s"` // from the draw's request to phase DRAWN
	Paid            int            `json:"paid"`
	LeftToExpire    int            `json:"left_to_expire"`
	PaidLate        int            `json:"paid_late"` // answered REFUND_REQUIRED after the reservation's expire_at: the tool was slow, not the server wrong
	Promoted        int            `json:"promoted"`
	PromotedPaid    int            `json:"promoted_paid"`
	PromotedLate    int            `json:"promoted_paid_late"`
	AuditorOK       bool           `json:"auditor_ok"`
	AuditorFailures []string       `json:"auditor_failures,omitempty"`
	Mismatches      []string       `json:"mismatches,omitempty"`
}

// line is the report in one line of the summary.
func (r *LotteryReport) line() string {
	return fmt.Sprintf("%d entered in %.1f s (%.0f/s, %d repeats got their entry), %d winners and %d waitlisted drawn in %.1f s, "+
		"%d paid (%d too late), %d left to expire, %d promoted from the waitlist (%d paid, %d too late), auditor ok %v",
		r.Entered, r.EnterS, r.EntriesPerS, r.RepeatsSame, r.Winners, r.Waitlisted, r.DrawS,
		r.Paid, r.PaidLate, r.LeftToExpire, r.Promoted, r.PromotedPaid, r.PromotedLate, r.AuditorOK)
}

type lotteryBeacon struct {
	Source string `json:"source"`
	Round  uint64 `json:"round"`
}

// lotteryEntry is what an entrant got.
type lotteryEntry struct {
	requestID string
	seq       uint32
}

func runLottery(ctx context.Context, config Config, client *Client) (*Result, error) {
	rep := &LotteryReport{Entrants: config.Requests, EntryOutcomes: map[string]int{}}
	result := &Result{Scenario: config.Scenario, Target: config.Target, CampaignID: config.CampaignID, Campaigns: 1,
		Loop: "closed", Concurrency: config.Concurrency, Seed: config.Seed, SKUs: 1, SaleLimit: config.Stock,
		StartedAt: time.Now(), Lottery: rep, Outcomes: map[string]int64{}}
	fail := func(format string, args ...any) {
		rep.Mismatches = append(rep.Mismatches, fmt.Sprintf(format, args...))
	}
	now := time.Now()
	closeAt := now.Add(config.Duration)
	round := uint64((closeAt.Unix()-lottery.QuicknetGenesis)/lottery.QuicknetPeriod + 2)
	roundAt, _ := lottery.RoundTimeMs(lottery.SourceDrandQuicknet, round)
	const skuID = "lottery-1"
	spec := CampaignSpec{CampaignID: config.CampaignID, StartAt: FormatTime(now.Add(-2 * time.Second)), EndAt: FormatTime(now.Add(campaignSlack)),
		PaymentWindow: config.PaymentWindow.String(), ReleaseOnClose: true,
		SKUs: []SKUSpec{{SKUID: skuID, SaleLimit: config.Stock, Allocation: "lottery",
			EntriesOpenAt: FormatTime(now.Add(-time.Second)), EntriesCloseAt: FormatTime(closeAt),
			Beacon: &lotteryBeacon{Source: lottery.SourceDrandQuicknet, Round: round}, Waitlist: config.Stock}}}
	if err := client.PutCampaign(ctx, spec); err != nil {
		return nil, err
	}
	l := &lotteryRun{ctx: ctx, client: client, config: config, skuID: skuID, rep: rep}
	progress := func(format string, args ...any) {
		if config.Progress != nil {
			fmt.Fprintf(config.Progress, "[lottery] "+format+"\n", args...)
		}
	}
	progress("%d entrants enter until %s", config.Requests, FormatTime(closeAt))
	entries := l.enterAll()
	for outcome, n := range rep.EntryOutcomes {
		result.Outcomes[outcome] += int64(n)
		result.Requests += int64(n)
	}
	result.Attempts = rep.Entered
	if rep.EnterS > 0 {
		result.ThroughputRPS = float64(result.Requests) / rep.EnterS
	}
	if time.Now().After(closeAt) {
		fail("the entries took longer than the entry window (%s): raise --duration", config.Duration)
	}
	progress("%d entered in %.1f s; the draw waits for round %d at %s", rep.Entered, rep.EnterS, round, FormatTime(time.UnixMilli(roundAt)))
	if err := sleepUntil(ctx, time.UnixMilli(roundAt+200)); err != nil {
		return result, nil
	}
	evidence, pool, err := l.draw(round)
	if err != nil {
		fail("%v", err)
		return l.finish(result), nil
	}
	ev, err := lottery.ParseEvidence(evidence)
	if err != nil {
		fail("evidence: %v", err)
		return l.finish(result), nil
	}
	audit := lottery.Verify(ev, pool)
	rep.AuditorOK = audit.OK
	for _, c := range audit.Checks {
		if !c.OK {
			rep.AuditorFailures = append(rep.AuditorFailures, c.Name+": "+c.Detail)
		}
	}
	parsed, _ := lottery.ParsePool(pool)
	draw := lottery.Draw(ev.Seed, parsed, lottery.Rules{Units: uint32(config.Stock), Waitlist: uint32(config.Stock)})
	rep.Winners, rep.Waitlisted = len(draw.Winners), len(draw.Waitlist)
	progress("drawn in %.1f s: %d winners, %d waitlisted; auditor ok %v; paying (one winner in ten lets the reservation expire)", rep.DrawS, rep.Winners, rep.Waitlisted, audit.OK)
	bySeq := make(map[uint32]string, len(entries))
	for _, e := range entries {
		bySeq[e.seq] = e.requestID
	}
	unpaid := 0
	l.forEach(draw.Winners, func(i int, seq uint32) {
		if i%10 == 9 {
			return
		}
		switch l.payEntry(bySeq[seq]) {
		case payPaid:
			l.count(&rep.Paid)
		case payLate:
			l.count(&rep.PaidLate)
		}
	})
	for i := range draw.Winners {
		if i%10 == 9 {
			unpaid++
		}
	}
	rep.LeftToExpire = unpaid
	// The unpaid reservations expire; the first waitlisted entrants get
	// their tokens, with a fresh payment window.
	promote := draw.Waitlist[:min(unpaid, len(draw.Waitlist))]
	deadline := time.Now().Add(config.PaymentWindow + 30*time.Second)
	if err := sleepUntil(ctx, time.Now().Add(config.PaymentWindow)); err != nil {
		return l.finish(result), nil
	}
	progress("waiting for %d promotions from the waitlist", len(promote))
	l.forEach(promote, func(_ int, seq uint32) {
		for {
			st, ok := l.entryStatus(bySeq[seq])
			if ok && st.Status == "WON" {
				l.count(&rep.Promoted)
				switch l.pay(st.ReservationID) {
				case payPaid:
					l.count(&rep.PromotedPaid)
				case payLate:
					l.count(&rep.PromotedLate)
				}
				return
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				l.mismatch("waitlisted entry %d not promoted in time (status %s)", seq, st.Status)
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	if next := draw.Waitlist[min(unpaid, len(draw.Waitlist)):]; len(next) > 0 {
		if st, _ := l.entryStatus(bySeq[next[0]]); st.Status != "WAITLISTED" || st.Position != 1 {
			fail("the next waitlisted entrant is %s at position %d, want WAITLISTED at 1", st.Status, st.Position)
		}
	}
	report, err := client.Audit(context.WithoutCancel(ctx), config.CampaignID, skuID)
	if err != nil {
		fail("audit: %v", err)
	} else {
		spec := SKUSpec{SKUID: skuID, SaleLimit: config.Stock}
		result.Audit = summarizeAudits([]SKUSpec{spec}, []skuAudit{{report: report}})
		for _, finding := range checkAudit(spec, report) {
			fail("the server's audit: %s", finding)
		}
		if want := int64(rep.Paid + rep.PromotedPaid); report.Confirmed != want || report.Confirmed > config.Stock {
			fail("the server confirms %d units, the tool paid %d (sale_limit %d)", report.Confirmed, want, config.Stock)
		}
	}
	result.Accepted = int64(rep.Paid + rep.PromotedPaid)
	return l.finish(result), nil
}

// lotteryRun is the scenario's state.
type lotteryRun struct {
	ctx    context.Context
	client *Client
	config Config
	skuID  string
	rep    *LotteryReport
	mu     sync.Mutex
}

func (l *lotteryRun) mismatch(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.rep.Mismatches) < 20 {
		l.rep.Mismatches = append(l.rep.Mismatches, fmt.Sprintf(format, args...))
	}
}

func (l *lotteryRun) count(n *int) {
	l.mu.Lock()
	*n++
	l.mu.Unlock()
}

// finish fills the verdict.
func (l *lotteryRun) finish(result *Result) *Result {
	rep := l.rep
	result.Failures = append(result.Failures, rep.Mismatches...)
	if !rep.AuditorOK {
		result.Failures = append(result.Failures, fmt.Sprintf("the auditor fails the draw: %v", rep.AuditorFailures))
	}
	if rep.Entered != rep.Entrants {
		result.Failures = append(result.Failures, fmt.Sprintf("%d of %d entrants entered", rep.Entered, rep.Entrants))
	}
	result.ElapsedS = time.Since(result.StartedAt).Seconds()
	result.Passed = len(result.Failures) == 0
	return result
}

// forEach runs fn over seqs on the configured number of workers.
func (l *lotteryRun) forEach(seqs []uint32, fn func(i int, seq uint32)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(l.config.Concurrency, max(1, len(seqs))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(seqs) || l.ctx.Err() != nil {
					return
				}
				fn(i, seqs[i])
			}
		}()
	}
	wg.Wait()
}

// enterAnswer is the body of an entry's answer.
type enterAnswer struct {
	Outcome  string `json:"outcome"`
	Error    string `json:"error"`
	EntrySeq uint32 `json:"entry_seq"`
}

// enterAll enters every entrant; one in twenty enters again under another
// request_id and must get the same entry.
func (l *lotteryRun) enterAll() []lotteryEntry {
	n := int(l.config.Requests)
	entries := make([]lotteryEntry, n)
	seqs := make([]uint32, n)
	for i := range seqs {
		seqs[i] = uint32(i)
	}
	start := time.Now()
	l.forEach(seqs, func(i int, _ uint32) {
		user, request := fmt.Sprintf("u%d", i+1), fmt.Sprintf("e%d", i+1)
		a, ok := l.enter(request, user)
		if !ok {
			return
		}
		entries[i] = lotteryEntry{requestID: request, seq: a.EntrySeq}
		l.mu.Lock()
		l.rep.Entered++
		l.mu.Unlock()
		if i%20 == 0 {
			if again, ok := l.enter(request+"-again", user); ok && again.EntrySeq == a.EntrySeq {
				l.mu.Lock()
				l.rep.RepeatsSame++
				l.mu.Unlock()
			} else {
				l.mismatch("entrant %s entered twice: entry %d, then %d", user, a.EntrySeq, again.EntrySeq)
			}
		}
	})
	l.rep.EnterS = time.Since(start).Seconds()
	if l.rep.EnterS > 0 {
		l.rep.EntriesPerS = float64(l.rep.Entered) / l.rep.EnterS
	}
	return entries
}

// enter posts one entry, resending after 429, 503, 504 or a transport
// error, up to MaxResends times.
func (l *lotteryRun) enter(request, user string) (enterAnswer, bool) {
	for attempt := 0; ; attempt++ {
		e, err := l.client.api.Enter(l.ctx, client.EntryRequest{CampaignID: l.config.CampaignID, SKUID: l.skuID, RequestID: request, UserID: user})
		code, reason, terr := status(err)
		outcome := "error"
		var a enterAnswer
		switch {
		case err == nil:
			a = enterAnswer{Outcome: e.Outcome, EntrySeq: e.EntrySeq}
			outcome = e.Outcome
		case terr == nil:
			a.Error, outcome = reason, reason
		}
		l.mu.Lock()
		l.rep.EntryOutcomes[outcome]++
		l.mu.Unlock()
		if err == nil {
			return a, true
		}
		retry := terr != nil || code == 429 || code == 503 || code == 504
		if !retry || attempt >= l.config.MaxResends || l.ctx.Err() != nil {
			l.mismatch("entry %s: %v", request, err)
			return a, false
		}
		time.Sleep(time.Duration(10*(attempt+1)) * time.Millisecond)
	}
}

// draw posts the draw, retrying while the round is not due by the
// server's clock, and waits for the phase DRAWN; it returns the evidence
// and the exported pool.
func (l *lotteryRun) draw(round uint64) (evidence, pool []byte, err error) {
	randomness := sha256.Sum256([]byte(l.config.CampaignID))
	beacon := client.Beacon{Round: round, Randomness: fmt.Sprintf("%x", randomness)}
	start := time.Now()
	deadline := start.Add(2 * time.Minute)
	for {
		err := l.client.api.Draw(l.ctx, l.config.CampaignID, l.skuID, beacon)
		if err == nil {
			break
		}
		code, _, terr := status(err)
		if time.Now().After(deadline) || l.ctx.Err() != nil || terr == nil && code != 409 && code < 500 {
			return nil, nil, fmt.Errorf("draw: %w", err)
		}
		time.Sleep(500 * time.Millisecond) // BEACON_NOT_DUE or ENTRIES_OPEN by the server's clock
	}
	for {
		phase, body, err := l.client.api.Lottery(l.ctx, l.config.CampaignID, l.skuID)
		if err == nil && phase == "DRAWN" {
			l.rep.DrawS = time.Since(start).Seconds()
			evidence = body
			break
		}
		if time.Now().After(deadline) || l.ctx.Err() != nil {
			return nil, nil, errors.New("the draw is not recorded within 2 minutes")
		}
		time.Sleep(200 * time.Millisecond)
	}
	pool, err = l.client.api.LotteryEntries(l.ctx, l.config.CampaignID, l.skuID)
	if err != nil {
		return nil, nil, fmt.Errorf("entries.csv: %w", err)
	}
	return evidence, pool, nil
}

// entryState is an entry's status answer.
type entryState struct {
	Status        string `json:"status"`
	Position      int    `json:"position"`
	ReservationID string `json:"reservation_id"`
}

func (l *lotteryRun) entryStatus(request string) (entryState, bool) {
	st, err := l.client.api.EntryStatus(l.ctx, l.config.CampaignID, l.skuID, request)
	if err != nil {
		return entryState{}, false
	}
	return entryState{Status: st.Status, Position: st.Position, ReservationID: st.ReservationID}, true
}

// payOutcome is what became of a payment the scenario made.
type payOutcome int

const (
	payFailed payOutcome = iota // a mismatch, recorded
	payPaid
	payLate // refused as REFUND_REQUIRED, answered after the reservation's expire_at
)

// payEntry pays the reservation a winning entry holds.
func (l *lotteryRun) payEntry(request string) payOutcome {
	st, ok := l.entryStatus(request)
	if !ok || st.Status != "WON" {
		l.mismatch("winner %s: status %s", request, st.Status)
		return payFailed
	}
	return l.pay(st.ReservationID)
}

// pay pays a reservation. A payment answered REFUND_REQUIRED is the
// server's right answer when the reservation expired before the payment
// reached it, which a loaded client may cause with a short payment
// window: it counts as late, not as a mismatch, when the answer came
// after the reservation's expire_at (an earlier one would be the server
// closing a reservation before its time).
func (l *lotteryRun) pay(reservationID string) payOutcome {
	sum := sha256.Sum256([]byte(reservationID))
	paymentID := fmt.Sprintf("pay-%x", sum[:8])
	ans, status, err := l.client.Pay(l.ctx, reservationID, PaymentRequest{PaymentID: paymentID, Amount: 1, ReservationID: reservationID})
	answered := time.Now()
	if err == nil && status == 200 && ans.State == "PAID" {
		return payPaid
	}
	if err == nil && ans.Error == "REFUND_REQUIRED" {
		r, rerr := l.client.api.Reservation(l.ctx, reservationID)
		if rerr == nil && !r.ExpireAt.IsZero() && answered.After(r.ExpireAt) {
			return payLate
		}
	}
	l.mismatch("pay %s: %v %d %s %s", reservationID, err, status, ans.State, ans.Error)
	return payFailed
}

// sleepUntil waits until t or ctx's end.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
