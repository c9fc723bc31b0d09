package sku

import "testing"

// TestGate walks the sale gate over the window, the pause and the stock,
// with the answer a new reserve gets and whether sold out is for good.
func TestGate(t *testing.T) {
	def := Definition{StartAt: 1_000, EndAt: 2_000}
	stock := func(available, reserved uint32) Counts { return Counts{Available: available, Reserved: reserved} }
	cases := []struct {
		name    string
		paused  bool
		c       Counts
		now     int64
		want    Verdict
		refusal Outcome
		forGood bool
	}{
		{"open", false, stock(5, 0), 1_500, VerdictOpen, OutcomeNone, false},
		{"at start_at", false, stock(5, 0), 1_000, VerdictOpen, OutcomeNone, false},
		{"before start_at", false, stock(5, 0), 999, VerdictNotStarted, OutcomeNotStarted, false},
		{"before start_at wins over sold out and pause", true, stock(0, 0), 999, VerdictNotStarted, OutcomeNotStarted, false},
		{"at end_at", false, stock(5, 0), 2_000, VerdictEnded, OutcomeEnded, false},
		{"ended with none left", false, stock(0, 3), 2_000, VerdictEndedSoldOut, OutcomeEnded, true},
		{"ended wins over pause", true, stock(5, 0), 2_500, VerdictEnded, OutcomeEnded, false},
		{"paused", true, stock(5, 0), 1_500, VerdictPaused, OutcomePaused, false},
		{"paused, none left, some reserved", true, stock(0, 3), 1_500, VerdictPaused, OutcomePaused, false},
		{"paused, none left, none reserved", true, stock(0, 0), 1_500, VerdictPausedSoldOut, OutcomePaused, true},
		{"sold out, some reserved", false, stock(0, 3), 1_500, VerdictSoldOut, OutcomeSoldOut, false},
		{"sold out, none reserved", false, stock(0, 0), 1_500, VerdictFinalSoldOut, OutcomeSoldOut, true},
	}
	for _, c := range cases {
		v := Gate(&def, c.paused, &c.c, c.now)
		o, refused := v.Refusal()
		if v != c.want || o != c.refusal || refused != (c.refusal != OutcomeNone) || v.SoldOutForGood() != c.forGood {
			t.Errorf("%s: got %s (refusal %s %v, for good %v), want %s (refusal %s, for good %v)",
				c.name, v, o, refused, v.SoldOutForGood(), c.want, c.refusal, c.forGood)
		}
	}
	if s := Verdict(200).String(); s != "Verdict(200)" {
		t.Errorf("unknown verdict renders %q", s)
	}
}

// TestReserveDecidesWithTheGateAtDecisionTime: Machine.Reserve asks the
// gate at max(now, LastAt), so a clock that steps back past end_at still
// answers ENDED, and a sold-out SKU first expires due reservations.
func TestReserveDecidesWithTheGateAtDecisionTime(t *testing.T) {
	m := New()
	def := Definition{CampaignID: "c", SKUID: "s", StartAt: 1_000, EndAt: 2_000, PaymentWindowMs: 100, SaleLimit: 1, ReleaseOnClose: true}
	if _, _, err := m.Define(1_000, def, nil); err != nil {
		t.Fatal(err)
	}
	if res, _ := m.Reserve(1_000, "r1", "u1", nil); res.Outcome != OutcomeAccepted {
		t.Fatalf("first reserve: %s", res.Outcome)
	}
	// Sold out until r1's expire_at (1,100); at it, the reserve expires r1
	// and takes its token.
	if res, _ := m.Reserve(1_099, "r2", "u2", nil); res.Outcome != OutcomeSoldOut {
		t.Fatalf("before expire_at: %s, want SOLD_OUT", res.Outcome)
	}
	res, recs := m.Reserve(1_100, "r3", "u3", nil)
	if res.Outcome != OutcomeAccepted || len(recs) != 2 || recs[0].Type != RecordClosed {
		t.Fatalf("at expire_at: %s with %d records, want ACCEPTED after closing r1", res.Outcome, len(recs))
	}
	if m.Expire(2_000, 1, nil); m.LastAt() != 2_000 {
		t.Fatalf("last_at %d", m.LastAt())
	}
	if res, _ := m.Reserve(1_500, "r4", "u4", nil); res.Outcome != OutcomeEnded {
		t.Fatalf("clock stepped back after end_at: %s, want ENDED", res.Outcome)
	}
}
