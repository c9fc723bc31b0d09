package sku

import "fmt"

// The sale gate: the one rule that says whether a SKU sells at a given
// moment (its window, its pause, its stock). Machine.Reserve decides with
// it on the live state; the HTTP ingress asks it on the durable state the
// SKU published, for its fast answers and its coarse status. Nothing else
// decides the window, the pause or sold out.

// Verdict is what the sale gate says about a SKU at one moment. Each value
// fixes both the answer a new reserve gets (Refusal) and whether the lack
// of stock is for good (SoldOutForGood): they differ in which condition
// wins, so the gate names every combination once.
type Verdict uint8

// Verdicts, in the order Gate tests them.
const (
	// VerdictOpen: within the window, not paused, a token available.
	VerdictOpen Verdict = iota
	// VerdictNotStarted: before start_at.
	VerdictNotStarted
	// VerdictEndedSoldOut: at or after end_at, no token available.
	VerdictEndedSoldOut
	// VerdictEnded: at or after end_at, tokens left unsold.
	VerdictEnded
	// VerdictPausedSoldOut: paused within the window, no token available
	// and none reserved, so none can come back.
	VerdictPausedSoldOut
	// VerdictPaused: paused within the window otherwise.
	VerdictPaused
	// VerdictFinalSoldOut: within the window, no token available and none
	// reserved: no release or expiry can bring one back (only a
	// redefinition raising sale_limit could).
	VerdictFinalSoldOut
	// VerdictSoldOut: within the window, no token available now, but
	// reserved tokens may come back (expiry, cancel, release).
	VerdictSoldOut
)

var verdictNames = [...]string{
	VerdictOpen:          "OPEN",
	VerdictNotStarted:    "NOT_STARTED",
	VerdictEndedSoldOut:  "ENDED_SOLD_OUT",
	VerdictEnded:         "ENDED",
	VerdictPausedSoldOut: "PAUSED_SOLD_OUT",
	VerdictPaused:        "PAUSED",
	VerdictFinalSoldOut:  "FINAL_SOLD_OUT",
	VerdictSoldOut:       "SOLD_OUT",
}

func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return fmt.Sprintf("Verdict(%d)", uint8(v))
}

// Gate is the sale gate of a SKU defined by d, paused or not, with counts
// c, at nowMs (Unix ms). Only c.Available and c.Reserved are read. The
// caller chooses the moment: Machine.Reserve passes its decision time
// max(now, lastAt), the ingress the server's clock.
//
// A celled SKU (d.Cell set) is never sold out for good within its window:
// a grant or a return of another cell may bring tokens, so an empty cell
// is VerdictSoldOut (or VerdictPaused), not final.
func Gate(d *Definition, paused bool, c *Counts, nowMs int64) Verdict {
	return gate(d, paused, c.Available, c.Reserved, nowMs)
}

// gate is Gate on the two counts it reads.
func gate(d *Definition, paused bool, available, reserved uint32, nowMs int64) Verdict {
	empty := available == 0
	drained := empty && reserved == 0 && d.Cell == "" // nothing can come back
	switch {
	case nowMs < d.StartAt:
		return VerdictNotStarted
	case nowMs >= d.EndAt && empty:
		return VerdictEndedSoldOut
	case nowMs >= d.EndAt:
		return VerdictEnded
	case paused && drained:
		return VerdictPausedSoldOut
	case paused:
		return VerdictPaused
	case drained:
		return VerdictFinalSoldOut
	case empty:
		return VerdictSoldOut
	}
	return VerdictOpen
}

// Refusal returns the answer a new reserve gets under v: NOT_STARTED,
// ENDED, PAUSED or SOLD_OUT, and false for VerdictOpen. The window and the
// pause win over the stock.
func (v Verdict) Refusal() (Outcome, bool) {
	switch v {
	case VerdictNotStarted:
		return OutcomeNotStarted, true
	case VerdictEnded, VerdictEndedSoldOut:
		return OutcomeEnded, true
	case VerdictPaused, VerdictPausedSoldOut:
		return OutcomePaused, true
	case VerdictSoldOut, VerdictFinalSoldOut:
		return OutcomeSoldOut, true
	}
	return OutcomeNone, false
}

// SoldOutForGood reports whether no token is available and none can come
// back under v: the sale ended with none left, or none is reserved.
func (v Verdict) SoldOutForGood() bool {
	return v == VerdictEndedSoldOut || v == VerdictPausedSoldOut || v == VerdictFinalSoldOut
}

// gate is the sale gate on the live state at decision time at: the two
// counts it reads, not the whole of Counts (every reserve asks it twice).
func (m *Machine) gate(at int64) Verdict {
	return gate(&m.def, m.paused, m.pool.available(), m.pool.reserved, at)
}
