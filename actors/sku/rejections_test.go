package sku

import (
	"bytes"
	"fmt"
	"testing"
)

// TestRejectionCap: a sold-out SKU records SOLD_OUT for the first
// MaxRecordedRejections request_ids and answers the rest SOLD_OUT without
// a record; a repeat of a recorded one keeps its answer after a token came
// back, one beyond the cap is decided again. Replay of the records and the
// state codec agree with the live Machine at the cap.
func TestRejectionCap(t *testing.T) {
	m := New()
	def := Definition{CampaignID: "c", SKUID: "s", StartAt: 1_000, EndAt: 1_000_000, PaymentWindowMs: 60_000, SaleLimit: 1, ReleaseOnClose: true}
	_, log, err := m.Define(1_000, def, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, log := m.Reserve(1_000, "buyer", "u0", log)
	if res.Outcome != OutcomeAccepted {
		t.Fatalf("first reserve: %s", res.Outcome)
	}
	seq := uint32(1)
	for i := 0; i < MaxRecordedRejections; i++ {
		before := len(log)
		res, log = m.Reserve(1_001, fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i+1), log)
		if res.Outcome != OutcomeSoldOut || len(log) != before+1 || log[before].Type != RecordRejected {
			t.Fatalf("reserve %d: %s with %d records, want a recorded SOLD_OUT", i, res.Outcome, len(log)-before)
		}
	}
	if n := m.Counts().Rejected; n != MaxRecordedRejections {
		t.Fatalf("rejected %d, want %d", n, MaxRecordedRejections)
	}
	atCap := m.Hash()

	// Beyond the cap: SOLD_OUT, no record, nothing changes.
	res, more := m.Reserve(1_002, "over", "u-over", nil)
	if res.Outcome != OutcomeSoldOut || len(more) != 0 || m.Hash() != atCap {
		t.Fatalf("beyond the cap: %s with %d records (state changed: %v)", res.Outcome, len(more), m.Hash() != atCap)
	}
	if _, ok := m.Lookup("over"); ok {
		t.Fatal("a request_id beyond the cap has a recorded answer")
	}
	if res, more = m.Reserve(1_002, "over", "u-over", nil); res.Outcome != OutcomeSoldOut || res.Duplicate || len(more) != 0 {
		t.Fatalf("repeat beyond the cap: %s duplicate=%v records %d", res.Outcome, res.Duplicate, len(more))
	}

	// Replay of the log and the state codec agree with the live Machine.
	replayed := New()
	for i := range log {
		if err := replayed.Apply(&log[i]); err != nil {
			t.Fatalf("replay record %d: %v", i, err)
		}
	}
	if replayed.Hash() != atCap {
		t.Fatal("replay at the cap differs from the live state")
	}
	encoded := encodeFrozen(t, m.Freeze())
	decoded, err := DecodeState(encoded)
	if err != nil {
		t.Fatalf("decode at the cap: %v", err)
	}
	if decoded.Hash() != atCap || !bytes.Equal(encodeFrozen(t, decoded.Freeze()), encoded) {
		t.Fatal("state codec round trip at the cap differs")
	}
	if res, more = decoded.Reserve(1_002, "over-2", "u-over-2", nil); res.Outcome != OutcomeSoldOut || len(more) != 0 {
		t.Fatalf("decoded state beyond the cap: %s with %d records", res.Outcome, len(more))
	}

	// A token comes back: a recorded request_id keeps SOLD_OUT, the one
	// beyond the cap is decided anew.
	if res, _ = m.Close(1_003, seq, ReasonCancelled, nil); res.Outcome != OutcomeClosed {
		t.Fatalf("cancel: %s", res.Outcome)
	}
	if res, _ = m.Reserve(1_004, "r0", "u1", nil); res.Outcome != OutcomeSoldOut || !res.Duplicate {
		t.Fatalf("repeat of a recorded rejection: %s duplicate=%v", res.Outcome, res.Duplicate)
	}
	if res, _ = m.Reserve(1_004, "over", "u-over", nil); res.Outcome != OutcomeAccepted {
		t.Fatalf("repeat beyond the cap after a release: %s, want ACCEPTED", res.Outcome)
	}
}
