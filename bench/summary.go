package bench

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// WriteSummary prints the result as a short text report.
func WriteSummary(w io.Writer, r *Result) {
	loop := fmt.Sprintf("closed loop, concurrency %d", r.Concurrency)
	if r.Loop == "open" {
		loop = fmt.Sprintf("open loop, %.0f req/s, at most %d in flight", r.RateRPS, r.Concurrency)
	}
	fmt.Fprintf(w, "scenario   %s (%s) against %s\n", r.Scenario, loop, r.Target)
	campaign := r.CampaignID
	if r.Campaigns > 1 {
		campaign = fmt.Sprintf("%s-p* (%d campaigns)", r.CampaignID, r.Campaigns)
	}
	fmt.Fprintf(w, "campaign   %s: %d SKUs, sale_limit %s, seed %d\n", campaign, r.SKUs, groupDigits(r.SaleLimit), r.Seed)
	fmt.Fprintf(w, "load       %s attempts, %s requests in %.1f s = %s req/s\n",
		groupDigits(r.Attempts), groupDigits(r.Requests), r.ElapsedS, groupDigits(int64(r.ThroughputRPS)))
	fmt.Fprintf(w, "outcomes   accepted %s units (%s answers)", groupDigits(r.Accepted), groupDigits(r.AcceptedResponses))
	names := make([]string, 0, len(r.Outcomes))
	for name := range r.Outcomes {
		if name != OutcomeAccepted.String() {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, ", %s %s", name, groupDigits(r.Outcomes[name]))
	}
	fmt.Fprintln(w)
	if r.SoldOutAfterS > 0 {
		fmt.Fprintf(w, "sold out   %s\n", soldOutLine(r))
	}
	for _, kind := range r.ErrorKinds {
		fmt.Fprintf(w, "  error    %s x%s\n", kind.Detail, groupDigits(kind.Count))
	}
	fmt.Fprintf(w, "latency ms %-18s %9s %9s %9s %9s %9s %9s\n", "", "count", "p50", "p90", "p99", "p99.9", "max")
	writeLatencyRow(w, "all", r.LatencyMS)
	outcomes := make([]string, 0, len(r.LatencyByOutcomeMS))
	for name := range r.LatencyByOutcomeMS {
		outcomes = append(outcomes, name)
	}
	sort.Strings(outcomes)
	for _, name := range outcomes {
		writeLatencyRow(w, name, r.LatencyByOutcomeMS[name])
	}
	fmt.Fprintf(w, "checks     oversold %d, duplicate_winners %d, token_reused %d, retry_mismatches %d, undersold %d, unanswered %d\n",
		r.Oversold, r.DuplicateWinners, r.TokenReused, r.RetryMismatches, r.Undersold, r.Unanswered)
	if a := r.Audit; a != nil {
		status := "ok"
		if !a.OK {
			status = "FAILED"
		}
		fmt.Fprintf(w, "audit      %s: sale_limit %s, available %s, reserved %s, confirmed %s (%d SKUs read, %d failed)\n",
			status, groupDigits(a.SaleLimit), groupDigits(a.Available), groupDigits(a.Reserved), groupDigits(a.Confirmed), a.SKUsAudited, a.SKUsFailed)
		if a.Error != "" {
			fmt.Fprintf(w, "  error    %s\n", a.Error)
		}
		for i, violation := range a.Violations {
			if i == 10 {
				fmt.Fprintf(w, "  ...      %d more\n", len(a.Violations)-10)
				break
			}
			fmt.Fprintf(w, "  violation %s\n", violation)
		}
	}
	if p := r.Payflow; p != nil {
		fmt.Fprintf(w, "payflow    %s\n", p.line())
	}
	if l := r.Lottery; l != nil {
		fmt.Fprintf(w, "lottery    %s\n", l.line())
	}
	for i, example := range r.Examples {
		if i == 10 {
			break
		}
		fmt.Fprintf(w, "  example  %s\n", example)
	}
	if e := r.Environment; e != nil {
		for _, line := range e.lines() {
			fmt.Fprintf(w, "machine    %s\n", line)
		}
		for _, warning := range e.Warnings {
			fmt.Fprintf(w, "  warning  %s\n", warning)
		}
	}
	if r.Passed {
		fmt.Fprintln(w, "verdict    PASS")
		return
	}
	fmt.Fprintf(w, "verdict    FAIL\n  %s\n", strings.Join(r.Failures, "\n  "))
}

func writeLatencyRow(w io.Writer, name string, s LatencySummary) {
	fmt.Fprintf(w, "  %-25s %9s %9.3f %9.3f %9.3f %9.3f %9.3f\n", name, groupDigits(s.Count), s.P50, s.P90, s.P99, s.P999, s.Max)
}
