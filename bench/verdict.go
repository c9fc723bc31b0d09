package bench

import "fmt"

// expectations are what a scenario promises beyond the checks every run makes.
type expectations struct {
	// sellOut: every SKU must sell exactly its sale_limit, none left over,
	// or one unit to each of its users when the plan gives it fewer users
	// than units (see judge).
	sellOut bool
	// noRelease: nothing expires or is cancelled during the run, so the
	// server's reserved + confirmed must equal the units the clients saw.
	noRelease bool
}

// judge fills r.Failures and r.Passed. Every run fails on an oversold unit,
// a duplicate winner, a reused token, a resent request answered differently
// or an audit that is missing or does not hold. usersBySKU (nil: unknown)
// is how many distinct users the plan sent to each SKU: a SKU that must
// sell out is expected to sell min(sale_limit, its users).
func judge(r *Result, expect expectations, acceptedBySKU []int64, skus []SKUSpec, usersBySKU []int64) {
	var failures []string
	fail := func(format string, args ...any) { failures = append(failures, fmt.Sprintf(format, args...)) }
	if r.Oversold > 0 {
		fail("oversold: %d units accepted beyond sale_limit", r.Oversold)
	}
	if r.DuplicateWinners > 0 {
		fail("duplicate winners: %d users hold more than one reservation", r.DuplicateWinners)
	}
	if r.TokenReused > 0 {
		fail("token reused: %d tokens handed to a reservation while another held them", r.TokenReused)
	}
	if r.RetryMismatches > 0 {
		fail("retry mismatches: %d request ids answered differently when resent (or 202 without reservation_id)", r.RetryMismatches)
	}
	switch {
	case r.Audit == nil:
		fail("audit: not read")
	case r.Audit.Error != "":
		fail("audit: %s", r.Audit.Error)
	case !r.Audit.OK:
		fail("audit: %d SKUs do not hold (%d violations listed)", r.Audit.SKUsFailed, len(r.Audit.Violations))
	}
	if r.Attempts == 0 {
		fail("no attempt finished")
	}
	if r.Unanswered > 0 {
		fail("unanswered: %d attempts got no answer of the API (transport failures or answers outside the contract, listed under errors)", r.Unanswered)
	}
	if expect.sellOut {
		want, wantTotal := make([]int64, len(skus)), int64(0)
		for i, spec := range skus {
			want[i] = spec.SaleLimit
			if i < len(usersBySKU) {
				want[i] = min(want[i], usersBySKU[i])
			}
			wantTotal += want[i]
		}
		if r.Accepted != wantTotal {
			if wantTotal == r.SaleLimit {
				fail("accepted %d units, sale_limit is %d", r.Accepted, r.SaleLimit)
			} else {
				fail("accepted %d units, want %d: sale_limit %d, but some SKUs had fewer users than units", r.Accepted, wantTotal, r.SaleLimit)
			}
		}
		if r.Undersold > 0 {
			fail("undersold: %d units left available while requests were refused as SOLD_OUT", r.Undersold)
		}
		short := 0
		for i, accepted := range acceptedBySKU {
			if i < len(skus) && accepted != want[i] {
				if short < 5 {
					fail("%s accepted %d, want %d (sale_limit %d)", skus[i].SKUID, accepted, want[i], skus[i].SaleLimit)
				}
				short++
			}
		}
		if short > 5 {
			fail("... and %d more SKUs not sold exactly as expected", short-5)
		}
	}
	if expect.noRelease && r.Audit != nil && r.Audit.Error == "" {
		if held := r.Audit.Reserved + r.Audit.Confirmed; held != r.Accepted {
			fail("server holds %d units (reserved + confirmed), clients were accepted %d", held, r.Accepted)
		}
	}
	if r.Payflow != nil && r.Payflow.Mismatches > 0 {
		fail("payflow: %d reservations ended in a state their calls do not allow", r.Payflow.Mismatches)
	}
	r.Failures = failures
	if r.Failures == nil {
		r.Failures = []string{}
	}
	r.Passed = len(failures) == 0
}
