package sku

import (
	"bytes"
	"testing"
)

// TestDefinitionStampMovesWithTheDefinition: the shell publishes one copy
// of a definition for as long as its stamp stays, so the stamp must move
// whenever Definition's value does (a define, a redefinition, a lottery's
// commit, a decoded snapshot), and must name one Machine's definition.
func TestDefinitionStampMovesWithTheDefinition(t *testing.T) {
	m := New()
	def := Definition{CampaignID: "c", SKUID: "s", StartAt: 1_000, EndAt: 2_000, PaymentWindowMs: 100, SaleLimit: 5, ReleaseOnClose: true}
	stamp, seen := m.DefinitionStamp(), m.Definition()
	step := func(what string) {
		t.Helper()
		moved, changed := m.DefinitionStamp() != stamp, m.Definition() != seen
		if changed && !moved {
			t.Fatalf("%s changed the definition and kept its stamp %d", what, stamp)
		}
		stamp, seen = m.DefinitionStamp(), m.Definition()
	}
	if _, _, err := m.Define(1_000, def, nil); err != nil {
		t.Fatal(err)
	}
	step("define")
	if res, _ := m.Reserve(1_000, "r1", "u1", nil); res.Outcome != OutcomeAccepted {
		t.Fatalf("reserve: %s", res.Outcome)
	}
	if m.DefinitionStamp() != stamp {
		t.Fatal("a reserve moved the definition's stamp")
	}
	def.EndAt = 3_000
	if _, _, err := m.Define(1_001, def, nil); err != nil {
		t.Fatal(err)
	}
	step("redefine")

	var buf bytes.Buffer
	if _, err := m.Freeze().Encode(&buf); err != nil {
		t.Fatal(err)
	}
	decoded, err := DecodeState(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if decoded.Definition() != m.Definition() || decoded.DefinitionStamp() == m.DefinitionStamp() {
		t.Fatalf("a decoded copy has stamp %d beside its source's %d: one stamp names one Machine's definition",
			decoded.DefinitionStamp(), m.DefinitionStamp())
	}

	// A lottery SKU is defined by DEFINE, then given its rules by
	// LOTTERY_COMMITTED: replayed one by one, each moves the stamp.
	lot := newLottery(t, lotteryDef(2, 0))
	m = New()
	stamp, seen = m.DefinitionStamp(), m.Definition()
	for i := range lot.log {
		if err := m.Apply(&lot.log[i]); err != nil {
			t.Fatal(err)
		}
		step(lot.log[i].Type.String())
	}
	if seen.Lottery == nil {
		t.Fatal("a committed lottery's definition has no rules")
	}
}
