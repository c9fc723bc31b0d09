package sku

import (
	"bytes"
	"errors"
	"testing"
)

// device is a holder with one device key (and a tier and risk level).
func device(key byte, risk uint8) Holder {
	return Holder{Tier: 2, Risk: risk, Subjects: 1, Keys: [SubjectKindCount]SubjectKey{{key}}}
}

func capDefinition() Definition {
	return Definition{CampaignID: "c", SKUID: "s", StartAt: 0, EndAt: 1 << 40, PaymentWindowMs: 100,
		SaleLimit: 10, ReleaseOnClose: true, MaxUnpaidPerSubject: 1, PaymentWindowHighRiskMs: 30}
}

// replayAndCompare replays log from empty through the record codec and
// checks the hash, the audit and the state codec.
func replayAndCompare(t *testing.T, m *Machine, log []Record) {
	t.Helper()
	replayed := New()
	for i := range log {
		r, err := DecodeRecord(log[i].Type, log[i].AppendPayload(nil))
		if err != nil {
			t.Fatalf("decode record %d: %v", i, err)
		}
		if err := replayed.Apply(&r); err != nil {
			t.Fatalf("replay record %d: %v", i, err)
		}
	}
	if replayed.Hash() != m.Hash() {
		t.Fatal("replay gives another state")
	}
	restored, err := DecodeState(encodeFrozen(t, m.Freeze()))
	if err != nil {
		t.Fatal(err)
	}
	if restored.Hash() != m.Hash() {
		t.Fatal("the state codec gives another state")
	}
	for _, x := range []*Machine{m, replayed, restored} {
		if a := x.Audit(); !a.OK() {
			t.Fatal(a.Violations)
		}
		if x.UnpaidBySubject(0, SubjectKey{7}) != m.UnpaidBySubject(0, SubjectKey{7}) {
			t.Fatal("unpaid counts differ after replay or decode")
		}
	}
}

// Three users on one device with a cap of 1: the second gets SUBJECT_LIMIT,
// nothing recorded; once the first is paid the next may reserve, and once
// that one expires the third may.
func TestSubjectCapThreeUsersOneDevice(t *testing.T) {
	m := New()
	_, log, _ := m.Define(1, capDefinition(), nil)
	res, log := m.ReserveWith(10, "ep.alice", "alice", device(7, 0), log)
	if res.Outcome != OutcomeAccepted {
		t.Fatalf("alice: %s", res.Outcome)
	}
	for _, user := range []string{"bob", "carol"} {
		before := len(log)
		res, log = m.ReserveWith(11, "ep."+user, user, device(7, 0), log)
		if res.Outcome != OutcomeSubjectLimit || len(log) != before {
			t.Fatalf("%s: %s with %d records", user, res.Outcome, len(log)-before)
		}
		if _, known := m.Lookup("ep." + user); known {
			t.Fatalf("%s's refusal was recorded", user)
		}
	}
	// Another device, and the same key of another kind, are other subjects.
	if res, log = m.ReserveWith(12, "ep.dave", "dave", device(8, 0), log); res.Outcome != OutcomeAccepted {
		t.Fatalf("dave on another device: %s", res.Outcome)
	}
	network := Holder{Subjects: 1 << 3, Keys: [SubjectKindCount]SubjectKey{3: {7}}}
	if res, log = m.ReserveWith(12, "ep.erin", "erin", network, log); res.Outcome != OutcomeAccepted {
		t.Fatalf("erin with a network key equal to the device key: %s", res.Outcome)
	}
	// A reserve without a pass is not capped.
	if res, log = m.Reserve(12, "r-frank", "frank", log); res.Outcome != OutcomeAccepted {
		t.Fatalf("frank without a pass: %s", res.Outcome)
	}
	res, log = m.Pay(20, 1, "pay-alice", 100, log)
	if res.Outcome != OutcomePaid {
		t.Fatalf("alice pays: %s", res.Outcome)
	}
	res, log = m.ReserveWith(21, "ep.bob", "bob", device(7, 0), log)
	if res.Outcome != OutcomeAccepted || res.Reservation.ExpireAt != 121 {
		t.Fatalf("bob after alice paid: %s, expire_at %d", res.Outcome, res.Reservation.ExpireAt)
	}
	if res, log = m.ReserveWith(120, "ep.carol", "carol", device(7, 0), log); res.Outcome != OutcomeSubjectLimit {
		t.Fatalf("carol before bob's expire_at: %s", res.Outcome)
	}
	// At bob's expire_at his reservation is due: the reserve closes it first.
	res, log = m.ReserveWith(121, "ep.carol", "carol", device(7, 0), log)
	if res.Outcome != OutcomeAccepted {
		t.Fatalf("carol after bob's reservation expired: %s", res.Outcome)
	}
	if bob, _ := m.Get(5); bob.State != StateClosed || bob.CloseReason != ReasonExpired {
		t.Fatalf("bob's reservation: %s %s", bob.State, bob.CloseReason)
	}
	if n := m.UnpaidBySubject(0, SubjectKey{7}); n != 1 {
		t.Fatalf("unpaid on the device: %d", n)
	}
	replayAndCompare(t, m, log)
}

// Risk >= 1 gets the high-risk window, recorded in expire_at; the expiry
// walk closes a due high-risk reservation behind an earlier normal one.
func TestHighRiskWindow(t *testing.T) {
	def := capDefinition()
	def.MaxUnpaidPerSubject = 0
	m := New()
	_, log, _ := m.Define(1, def, nil)
	normal, log := m.ReserveWith(10, "r1", "u1", device(1, 0), log)
	risky, log := m.ReserveWith(11, "r2", "u2", device(2, 1), log)
	if normal.Reservation.ExpireAt != 110 || risky.Reservation.ExpireAt != 41 {
		t.Fatalf("expire_at %d and %d, want 110 and 41", normal.Reservation.ExpireAt, risky.Reservation.ExpireAt)
	}
	if next, ok := m.NextExpiry(); !ok || next != 41 {
		t.Fatalf("next expiry %d %v, want 41", next, ok)
	}
	log = m.Expire(41, 10, log)
	if v, _ := m.Get(2); v.State != StateClosed {
		t.Fatalf("the high-risk reservation is %s at its expire_at", v.State)
	}
	if v, _ := m.Get(1); v.State != StatePendingPayment {
		t.Fatalf("the normal reservation is %s before its expire_at", v.State)
	}
	if next, ok := m.NextExpiry(); !ok || next != 110 {
		t.Fatalf("next expiry %d %v, want 110", next, ok)
	}
	replayAndCompare(t, m, log)

	// A record whose expire_at does not follow its holder's window is refused.
	bad := New()
	_, _, _ = bad.Define(1, def, nil)
	r := Record{Type: RecordReserved, At: 10, Seq: 1, Token: 1, ExpireAt: 110, RequestID: "r1", UserID: "u1", Holder: device(1, 1)}
	if err := bad.Apply(&r); !errors.Is(err, ErrDoesNotApply) {
		t.Fatalf("high-risk reservation with the normal window: %v", err)
	}
}

// A record or state without the entry-pass fields is what older versions
// wrote; with them, the fields round-trip.
func TestPassFieldsAreTrailing(t *testing.T) {
	plain := Record{Type: RecordReserved, At: 5, Seq: 1, Token: 1, ExpireAt: 8, RequestID: "r1", UserID: "u1"}
	withHolder := plain
	withHolder.Holder = device(9, 1)
	a, b := plain.AppendPayload(nil), withHolder.AppendPayload(nil)
	if !bytes.HasPrefix(b, a) || len(b) != len(a)+3+SubjectKeySize {
		t.Fatalf("holder is not a trailing field: %x then %x", a, b)
	}
	got, err := DecodeRecord(RecordReserved, b)
	if err != nil || got != withHolder {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	if _, err := DecodeRecord(RecordReserved, b[:len(b)-1]); err == nil {
		t.Fatal("a cut holder decoded")
	}
	if _, err := DecodeRecord(RecordReserved, append(bytes.Clone(a), 0, 0, 0x10)); err == nil {
		t.Fatal("subject flag bit 4 decoded")
	}

	def := Definition{CampaignID: "c", SKUID: "s", StartAt: 1, EndAt: 2, PaymentWindowMs: 3, SaleLimit: 4}
	d0 := Record{Type: RecordDefine, At: 1, Def: def}
	def.EntryPass = EntryPassRule{Required: true, LeadMs: 60_000, TTLMs: 120_000}
	def.MaxUnpaidPerSubject, def.PaymentWindowHighRiskMs = 2, 1
	d1 := Record{Type: RecordDefine, At: 1, Def: def}
	a, b = d0.AppendPayload(nil), d1.AppendPayload(nil)
	if !bytes.HasPrefix(b, a) || len(b) == len(a) {
		t.Fatal("the definition's pass fields are not a trailing field")
	}
	if got, err := DecodeRecord(RecordDefine, b); err != nil || got != d1 {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	if got, err := DecodeRecord(RecordDefine, a); err != nil || got != d0 {
		t.Fatalf("old DEFINE: %+v %v", got, err)
	}
}

// The optional pass groups are written only when they hold something: an
// all-zero one would decode to the record written without it, so one
// record would have two encodings (the version rules: decoders refuse what
// encoders never write). A zero pass group before a cell group is what a
// celled or campaign-scope definition writes, and decodes.
func TestEmptyPassGroupsAreRefused(t *testing.T) {
	reserved := Record{Type: RecordReserved, At: 5, Seq: 1, Token: 1, ExpireAt: 8, RequestID: "r1", UserID: "u1"}
	a := reserved.AppendPayload(nil)
	if _, err := DecodeRecord(RecordReserved, append(bytes.Clone(a), 0, 0, 0)); !errors.Is(err, ErrBadRecord) {
		t.Errorf("RESERVED with an all-zero holder: %v", err)
	}
	define := Record{Type: RecordDefine, At: 1, Def: Definition{CampaignID: "c", SKUID: "s", StartAt: 1, EndAt: 2, PaymentWindowMs: 3, SaleLimit: 4}}
	a = define.AppendPayload(nil)
	zeroPasses := appendPassFields(nil, &define.Def)
	if _, err := DecodeRecord(RecordDefine, append(bytes.Clone(a), zeroPasses...)); !errors.Is(err, ErrBadRecord) {
		t.Errorf("DEFINE with an all-zero pass group and nothing after: %v", err)
	}
	celled := define
	celled.Def.Cell, celled.Def.CellMapVersion = "c1", 1
	if got, err := DecodeRecord(RecordDefine, celled.AppendPayload(nil)); err != nil || got != celled {
		t.Fatalf("a celled DEFINE (a zero pass group, then the cell): %+v %v", got, err)
	}
}

// The state's passes section is written only when the definition sets a
// pass field or a reservation has a holder: one with neither would decode
// to the state written without it, one state with two encodings.
func TestEmptyPassesSectionIsRefused(t *testing.T) {
	b := sampleState(t)
	m, err := DecodeState(b)
	if err != nil {
		t.Fatal(err)
	}
	empty := appendPassFields([]byte{stateSectionPasses}, &m.def)
	if _, err := DecodeState(append(append(bytes.Clone(b), empty...), 0)); err == nil {
		t.Fatal("a passes section with no pass field and no holder decoded")
	}
}

func TestPassFieldsRedefinition(t *testing.T) {
	d := capDefinition()
	next := d
	next.MaxUnpaidPerSubject = 3
	next.EntryPass = EntryPassRule{Required: true, LeadMs: 1, TTLMs: 2}
	if err := d.CheckRedefine(next); err != nil {
		t.Fatalf("cap and entry_pass may change: %v", err)
	}
	next.PaymentWindowHighRiskMs = 31
	if err := d.CheckRedefine(next); !errors.Is(err, ErrInvalidDefinition) {
		t.Fatalf("payment_window_high_risk changed: %v", err)
	}
	for _, bad := range []func(*Definition){
		func(d *Definition) { d.PaymentWindowHighRiskMs = d.PaymentWindowMs + 1 },
		func(d *Definition) { d.PaymentWindowHighRiskMs = -1 },
		func(d *Definition) { d.EntryPass.TTLMs = MaxEntryPassTTLMs + 1 },
		func(d *Definition) { d.EntryPass.LeadMs = -1 },
		func(d *Definition) { d.MaxUnpaidPerSubject = MaxSaleLimit + 1 },
	} {
		x := capDefinition()
		bad(&x)
		if err := x.Validate(); !errors.Is(err, ErrInvalidDefinition) {
			t.Fatalf("%+v validated", x)
		}
	}
	if d.EntryPassTTL() != DefaultEntryPassTTLMs || d.EntryPassLead() != DefaultEntryPassLeadMs {
		t.Fatal("zero entry_pass times do not take the defaults")
	}
}

// A reserve with a malformed holder answers INVALID and records nothing.
func TestReserveWithBadHolder(t *testing.T) {
	m := New()
	m.Define(1, capDefinition(), nil)
	h := device(1, 0)
	h.Keys[2] = SubjectKey{1} // a key of an absent kind
	if res, out := m.ReserveWith(10, "r1", "u1", h, nil); res.Outcome != OutcomeInvalid || len(out) != 0 {
		t.Fatalf("%s, %d records", res.Outcome, len(out))
	}
}
