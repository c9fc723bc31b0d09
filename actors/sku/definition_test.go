package sku

import (
	"errors"
	"strings"
	"testing"
)

// payment_window is at most a day for a new definition, whatever path
// decides it (Machine.Define, ValidateNew), while a DEFINE record decided
// under an older rule with a longer window still replays (Validate,
// Apply): a log must never stop recovering because a rule tightened.
func TestPaymentWindowBound(t *testing.T) {
	def := func(windowMs int64) Definition {
		return Definition{CampaignID: "c", SKUID: "s", StartAt: 0, EndAt: 1 << 40, PaymentWindowMs: windowMs, SaleLimit: 10, ReleaseOnClose: true}
	}
	for _, ok := range []int64{1, DefaultPaymentWindowMs, MaxPaymentWindowMs} {
		if err := def(ok).ValidateNew(); err != nil {
			t.Errorf("payment_window %d ms: %v", ok, err)
		}
	}
	long := def(MaxPaymentWindowMs + 1)
	err := long.ValidateNew()
	if !errors.Is(err, ErrInvalidDefinition) || !strings.Contains(err.Error(), "payment_window must be at most 24h") {
		t.Fatalf("ValidateNew of payment_window 24h + 1 ms: %v", err)
	}
	if _, _, err := New().Define(0, long, nil); !errors.Is(err, ErrInvalidDefinition) {
		t.Fatalf("Define of payment_window 24h + 1 ms: %v", err)
	}
	if err := long.Validate(); err != nil {
		t.Fatalf("Validate (replay) of payment_window 24h + 1 ms: %v", err)
	}
	m := New()
	long.IDKey = [16]byte{1}
	if err := m.Apply(&Record{Type: RecordDefine, Def: long}); err != nil {
		t.Fatalf("replay of a DEFINE with payment_window 24h + 1 ms: %v", err)
	}
	// Its repeat is no new decision: accepted, nothing recorded; a change
	// is one, and meets the bound.
	repeat := long
	repeat.IDKey = [16]byte{}
	if !repeat.Repeats(long) {
		t.Fatal("the definition as the log holds it (its key kept) does not repeat it")
	}
	if out, recs, err := m.Define(0, long, nil); err != nil || out != OutcomeOK || len(recs) != 0 {
		t.Fatalf("Define repeating the replayed definition: %v %d records %v", out, len(recs), err)
	}
	later := long
	later.EndAt++
	if later.Repeats(long) {
		t.Fatal("a later end_at repeats the definition")
	}
	if _, _, err := m.Define(0, later, nil); !errors.Is(err, ErrInvalidDefinition) {
		t.Fatalf("Define extending a definition whose payment_window is above the bound: %v", err)
	}
}
