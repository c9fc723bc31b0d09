package sku

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// celledWithPasses runs a celled SKU through a grant, an epoch and two
// reserves, with or without the entry-pass fields a celled SKU may set
// (then the first reserve carries a high-risk holder), and returns the
// encoded state after checking replay and decode against the live state.
func celledWithPasses(t *testing.T, passes bool) (*Machine, []byte) {
	t.Helper()
	d := Definition{CampaignID: "c", SKUID: "s", StartAt: 0, EndAt: 1 << 40, PaymentWindowMs: 100,
		SaleLimit: 10, ReleaseOnClose: true, Cell: "c1", CellMapVersion: 3}
	var h Holder
	if passes {
		d.EntryPass = EntryPassRule{Required: true, TTLMs: 30_000}
		d.PaymentWindowHighRiskMs = 30
		h = Holder{Tier: 2, Risk: 1}
	}
	m := New()
	o, log, err := m.Define(1, d, nil)
	if err != nil || o != OutcomeOK {
		t.Fatalf("define: %s %v", o, err)
	}
	if o, log, err = m.Grant(2, Allocation{Seq: 1, Ranges: []TokenRange{{3, 5}, {8, 8}}}, log); err != nil || o != OutcomeOK {
		t.Fatalf("grant: %s %v", o, err)
	}
	if o, log = m.SetEpoch(3, 2, log); o != OutcomeOK {
		t.Fatalf("epoch: %s", o)
	}
	var res Result
	if res, log = m.ReserveWith(4, "r1", "u1", h, log); res.Outcome != OutcomeAccepted {
		t.Fatalf("reserve r1: %s", res.Outcome)
	}
	if passes && res.Reservation.ExpireAt != 4+30 {
		t.Fatalf("the high-risk reservation expires at %d", res.Reservation.ExpireAt)
	}
	if res, log = m.Reserve(5, "r2", "u2", log); res.Outcome != OutcomeAccepted {
		t.Fatalf("reserve r2: %s", res.Outcome)
	}
	replayAndCompare(t, m, log)
	return m, encodeFrozen(t, m.Freeze())
}

// section encodes one trailing section of f on its own.
func section(f *Frozen, encode func(*stateEncoder, *Frozen)) []byte {
	var buf bytes.Buffer
	e := stateEncoder{w: &buf}
	encode(&e, f)
	e.flush()
	return buf.Bytes()
}

// TestStateSectionsComposeWithCell extends TestStateSectionsCompose to the
// cell section (tag 3): written only for a celled SKU, after the passes
// section (tag 1) when both are, decoded to the same state and hash; the
// cell section before the passes section, twice, missing, or after a
// lottery's section (tag 2) is refused.
func TestStateSectionsComposeWithCell(t *testing.T) {
	plain, plainState := celledWithPasses(t, false)
	both, bothState := celledWithPasses(t, true)
	if plain.Hash() == both.Hash() {
		t.Fatal("the pass fields do not change the state hash")
	}
	f := both.Freeze()
	passSection := section(f, (*stateEncoder).encodePasses)
	cellSection := section(f, (*stateEncoder).encodeCell)
	if len(passSection) == 0 || passSection[0] != stateSectionPasses || len(cellSection) == 0 || cellSection[0] != stateSectionCell {
		t.Fatalf("sections: passes %x, cell %x", passSection, cellSection)
	}
	if !bytes.HasSuffix(bothState, slices.Concat(passSection, cellSection)) {
		t.Fatalf("the state %x does not end with the passes then the cell section", bothState)
	}
	if plainCell := section(plain.Freeze(), (*stateEncoder).encodeCell); !bytes.Equal(plainCell, cellSection) ||
		len(section(plain.Freeze(), (*stateEncoder).encodePasses)) != 0 || !bytes.HasSuffix(plainState, plainCell) {
		t.Fatalf("the state without passes %x: no cell section or a passes section", plainState)
	}
	restored, err := DecodeState(bothState)
	if err != nil {
		t.Fatal(err)
	}
	if restored.Hash() != both.Hash() || !reflect.DeepEqual(restored.Definition(), both.Definition()) {
		t.Fatal("the decoded state differs")
	}
	if d := restored.Definition(); d.Cell != "c1" || d.CellMapVersion != 3 || d.PaymentWindowHighRiskMs != 30 || restored.Epoch() != 2 {
		t.Fatalf("decoded definition %+v, epoch %d", d, restored.Epoch())
	}
	if restoredPlain, err := DecodeState(plainState); err != nil || restoredPlain.Hash() != plain.Hash() {
		t.Fatalf("the state without passes: %v", err)
	}
	base := bothState[:len(bothState)-len(passSection)-len(cellSection)]
	for name, b := range map[string][]byte{
		"cell before passes": slices.Concat(base, cellSection, passSection),
		"cell twice":         slices.Concat(base, passSection, cellSection, cellSection),
		"no cell section":    slices.Concat(base, passSection), // tokens 3-5, 8 held with no grant
		"unknown tag 4":      slices.Concat(base, passSection, []byte{4}, cellSection[1:]),
	} {
		if _, err := DecodeState(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	// A lottery's state with a cell section after it: a celled SKU is
	// never a lottery.
	_, lotState := lotteryWithPasses(t, true)
	if _, err := DecodeState(slices.Concat(lotState, cellSection)); err == nil {
		t.Fatal("a lottery state with a cell section decoded")
	}
}

// TestDefineTrailingGroups pins DEFINE's layout after id_key: no group for
// a plain definition, the passes group alone for the entry-pass fields, the
// passes group (zero when unset) then the cell group for a celled SKU; all
// decode back, an older DEFINE (no group, or the passes group alone)
// decodes with no cell, and an empty cell in the cell group is refused.
func TestDefineTrailingGroups(t *testing.T) {
	base := Definition{CampaignID: "c", SKUID: "s", StartAt: 1, EndAt: 2, PaymentWindowMs: 3, SaleLimit: 4}
	withPasses := base
	withPasses.EntryPass = EntryPassRule{Required: true, LeadMs: 5, TTLMs: 6}
	withPasses.MaxUnpaidPerSubject, withPasses.PaymentWindowHighRiskMs = 7, 2
	celled := base
	celled.Cell, celled.CellMapVersion = "c1", 9
	both := withPasses
	both.MaxUnpaidPerSubject = 0
	both.Cell, both.CellMapVersion = "c1", 9
	plainLen := len((&Record{Type: RecordDefine, Def: base}).AppendPayload(nil))
	for _, tc := range []struct {
		name    string
		def     Definition
		trailer string // hex after id_key
	}{
		{"plain", base, ""},
		{"passes", withPasses, "01" + "0a" + "0c" + "07" + "04"},
		{"cell", celled, "00" + "00" + "00" + "00" + "00" + "02" + hex.EncodeToString([]byte("c1")) + "09"},
		{"passes and cell", both, "01" + "0a" + "0c" + "00" + "04" + "02" + hex.EncodeToString([]byte("c1")) + "09"},
	} {
		r := Record{Type: RecordDefine, Def: tc.def}
		payload := r.AppendPayload(nil)
		if got := hex.EncodeToString(payload[plainLen:]); got != tc.trailer {
			t.Errorf("%s: trailer %s, want %s", tc.name, got, tc.trailer)
		}
		back, err := DecodeRecord(RecordDefine, payload)
		if err != nil || back.Def != tc.def {
			t.Errorf("%s: decoded %+v, %v", tc.name, back.Def, err)
		}
	}
	emptyCell, _ := hex.DecodeString("0000000000" + "00" + "09")
	payload := slices.Concat((&Record{Type: RecordDefine, Def: base}).AppendPayload(nil), emptyCell)
	if _, err := DecodeRecord(RecordDefine, payload); err == nil || !strings.Contains(err.Error(), "empty cell") {
		t.Errorf("an empty cell in the cell group: %v", err)
	}
}

// TestCelledDefinitionRefusals: a celled SKU cannot be a lottery nor cap
// unpaid reservations per subject; Validate says so, and Define records
// nothing.
func TestCelledDefinitionRefusals(t *testing.T) {
	d := Definition{CampaignID: "c", SKUID: "s", StartAt: 0, EndAt: 1 << 40, PaymentWindowMs: 100,
		SaleLimit: 10, Cell: "c1", CellMapVersion: 1}
	lot := d
	lot.Lottery = lotteryDef(2, 1).Lottery
	capped := d
	capped.MaxUnpaidPerSubject = 1
	for name, def := range map[string]Definition{"lottery": lot, "max_unpaid_per_subject": capped} {
		m := New()
		o, recs, err := m.Define(1, def, nil)
		if o != OutcomeInvalid || err == nil || len(recs) != 0 || !strings.Contains(err.Error(), "celled SKU cannot") {
			t.Errorf("%s: %s %v with %d records", name, o, err, len(recs))
		}
	}
	if err := d.Validate(); err != nil {
		t.Fatalf("the celled definition alone: %v", err)
	}
}

// TestLotteryWinnerIDsNameNoCell: a lottery SKU is never celled, so its
// winners' reservation ids keep the four-part form: they parse to the
// winner's reservation and name no cell (the router sends them to the
// SKU's default cell), beside a celled SKU's five-part ids.
func TestLotteryWinnerIDsNameNoCell(t *testing.T) {
	m, _ := lotteryWithPasses(t, false)
	won := 0
	for i := 1; i <= 5; i++ {
		v, ok := m.EntryByRequest("r" + string(rune('0'+i)))
		if !ok || v.Status != EntryWon {
			continue
		}
		won++
		id := v.Reservation.ReservationID
		_, _, cell, seq, tag, err := ParseCellReservationID(id)
		if got, ok := m.Get(seq); err != nil || !ok || !m.Issued(cell, seq, tag) || got.ReservationID != id || got.UserID != v.Reservation.UserID {
			t.Errorf("winner id %s: seq %d, %v", id, seq, err)
		}
		if c := ReservationCell(id); c != "" || strings.Count(id, reservationIDSep) != 3 {
			t.Errorf("winner id %s names cell %q", id, c)
		}
	}
	if won == 0 {
		t.Fatal("no winner")
	}
	celled, _ := celledWithPasses(t, false)
	v, _ := celled.Get(1)
	if c := ReservationCell(v.ReservationID); c != "c1" {
		t.Fatalf("celled id %s names cell %q", v.ReservationID, c)
	}
}

// TestFrozenAuditCelled: the audit off the actor (Frozen.Audit) checks a
// celled SKU against its grants, as Machine.Audit does: a healthy one
// passes (its token ids have holes), a copy whose grants, unsold queue
// or released tokens disagree does not.
func TestFrozenAuditCelled(t *testing.T) {
	m, _ := celledWithPasses(t, true)
	if a := m.Freeze().Audit(); !a.OK() || a.Counts.Granted != 4 {
		t.Fatalf("healthy: %v, granted %d", a.Violations, a.Counts.Granted)
	}
	for name, corrupt := range map[string]func(f *Frozen){
		"a grant lost":         func(f *Frozen) { f.cell.grants = nil },
		"an unsold token held": func(f *Frozen) { f.unsold = rangeQueue{ranges: []TokenRange{{3, 4}}, units: 2} },
		"released and unsold":  func(f *Frozen) { f.released = append(f.released, f.unsold.ranges[0].First) },
	} {
		f := m.Freeze()
		corrupt(f)
		if a := f.Audit(); a.OK() {
			t.Errorf("%s: the audit passed", name)
		}
	}
}

// TestIssuedNamesTheSKUsCell: a celled SKU issued its reservation ids
// with its cell; the same sequence number and tag without a cell, or with
// another cell, name none of its reservations (another cell's SKU has its
// own key; an id must not have a second spelling), and a SKU that is not
// celled issued none that names a cell.
func TestIssuedNamesTheSKUsCell(t *testing.T) {
	m, _ := celledWithPasses(t, false)
	res, ok := m.Lookup("r1")
	if !ok || res.Outcome != OutcomeAccepted {
		t.Fatalf("r1: %+v %v", res, ok)
	}
	_, _, cell, seq, tag, err := ParseCellReservationID(res.Reservation.ReservationID)
	if err != nil || cell != "c1" {
		t.Fatalf("id %s: cell %q, %v", res.Reservation.ReservationID, cell, err)
	}
	for _, c := range []struct {
		cell string
		want bool
	}{{"c1", true}, {"", false}, {"c2", false}} {
		if got := m.Issued(c.cell, seq, tag); got != c.want {
			t.Errorf("Issued(%q, %d, %s) = %v, want %v", c.cell, seq, tag, got, c.want)
		}
	}
}
