package sku

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"testing"
)

// lotteryWithPasses runs a lottery SKU through entries and its draw, with
// or without the entry-pass fields in its definition, and returns the
// encoded state after checking replay and decode against the live state.
func lotteryWithPasses(t *testing.T, passes bool) (*Machine, []byte) {
	t.Helper()
	d := lotteryDef(2, 1)
	if passes {
		d.EntryPass = EntryPassRule{Required: true, TTLMs: 30_000}
		d.MaxUnpaidPerSubject = 2
	}
	r := newLottery(t, d)
	for i := 1; i <= 5; i++ {
		if res := r.enter(lotOpen+int64(i), fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i), uint8(i%2)); res.Outcome != OutcomeEntered {
			t.Fatalf("entry %d: %s", i, res.Outcome)
		}
	}
	r.draw(lotRoundT)
	checkSame(t, r.m, r.log)
	return r.m, encodeFrozen(t, r.m.Freeze())
}

// TestStateSectionsCompose: the passes section (tag 1) and the lottery
// section (tag 2) are each written only when used, in tag order when both
// are, decode to the same state, and enter the hash; the reverse order is
// refused.
func TestStateSectionsCompose(t *testing.T) {
	plain, plainState := lotteryWithPasses(t, false)
	both, bothState := lotteryWithPasses(t, true)
	if plain.Hash() == both.Hash() {
		t.Fatal("the pass fields do not change the state hash")
	}
	// The states agree up to the first trailing section: the lottery
	// section alone in one, the passes section then the same lottery
	// section in the other.
	p := 0
	for p < len(plainState) && plainState[p] == bothState[p] {
		p++
	}
	lotSection := plainState[p:]
	if len(lotSection) == 0 || lotSection[0] != lotterySectionTag || bothState[p] != stateSectionPasses ||
		!bytes.HasSuffix(bothState, lotSection) {
		t.Fatalf("sections: plain %x, with passes %x from byte %d", lotSection, bothState[p:], p)
	}
	passSection := bothState[p : len(bothState)-len(lotSection)]
	restored, err := DecodeState(bothState)
	if err != nil {
		t.Fatal(err)
	}
	if restored.Hash() != both.Hash() || !reflect.DeepEqual(restored.Definition(), both.Definition()) {
		t.Fatal("the decoded state differs")
	}
	if restored.Definition().Lottery == nil || restored.Definition().MaxUnpaidPerSubject != 2 {
		t.Fatalf("decoded definition %+v", restored.Definition())
	}
	reversed := slices.Concat(bothState[:p], lotSection, passSection)
	if _, err := DecodeState(reversed); err == nil {
		t.Fatal("the lottery section before the passes section decoded")
	}

	// A SKU that is no lottery and sets no entry-pass field writes no
	// trailing section; the pass fields alone add only the passes section.
	d := capDefinition()
	d.MaxUnpaidPerSubject, d.PaymentWindowHighRiskMs = 0, 0
	m := New()
	if _, _, err := m.Define(d.StartAt, d, nil); err != nil {
		t.Fatal(err)
	}
	none := encodeFrozen(t, m.Freeze())
	d.MaxUnpaidPerSubject = 1
	if _, _, err := m.Define(d.StartAt, d, nil); err != nil {
		t.Fatal(err)
	}
	withPasses := encodeFrozen(t, m.Freeze())
	if !bytes.HasPrefix(withPasses, none) || withPasses[len(none)] != stateSectionPasses {
		t.Fatalf("no sections %x, the passes section %x", none, withPasses)
	}
}
