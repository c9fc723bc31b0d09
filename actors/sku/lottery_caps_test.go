package sku

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
)

// lotteryCapDefinition is a lottery of 10 units, no waitlist, capping
// two unpaid reservations per subject key, with a 20 s high-risk window.
func lotteryCapDefinition() Definition {
	d := lotteryDef(10, 0)
	d.MaxUnpaidPerSubject = 2
	d.PaymentWindowHighRiskMs = 20_000
	return d
}

// TestLotterySubjectCap: on a lottery with max_unpaid_per_subject 2, a
// third entry whose pass carries the same device key is refused
// SUBJECT_LIMIT and not recorded, after the user's own entry and the
// window and the pause (reserve's order); other keys, another kind of key
// with the same bytes and entries without a pass are not capped; replay
// and a decoded snapshot refuse the same entry.
func TestLotterySubjectCap(t *testing.T) {
	r := newLottery(t, lotteryCapDefinition())
	at := int64(lotOpen + 10)
	for _, e := range []struct {
		user string
		h    Holder
	}{
		{"alice", device(7, 1)},
		{"bob", device(7, 0)},
		{"dave", device(8, 0)},
		{"erin", Holder{Subjects: 1 << 3, Keys: [SubjectKindCount]SubjectKey{3: {7}}}}, // a network key equal to the device key
		{"frank", Holder{}},
	} {
		if res := r.enterWith(at, "ep."+e.user, e.user, e.h); res.Outcome != OutcomeEntered || res.Duplicate {
			t.Fatalf("%s: %s (duplicate %v)", e.user, res.Outcome, res.Duplicate)
		}
	}
	before := len(r.log)
	if res := r.enterWith(at, "ep.carol", "carol", device(7, 0)); res.Outcome != OutcomeSubjectLimit || len(r.log) != before {
		t.Fatalf("carol on alice's and bob's device: %s with %d records", res.Outcome, len(r.log)-before)
	}
	if _, found := r.m.EntryByRequest("ep.carol"); found {
		t.Fatal("carol's refusal was recorded")
	}
	// The user's own entry is answered first, as a reserve's own purchase.
	if res := r.enterWith(at, "ep.alice-again", "alice", device(7, 1)); res.Outcome != OutcomeEntered || !res.Duplicate {
		t.Fatalf("alice again: %s (duplicate %v)", res.Outcome, res.Duplicate)
	}
	if res := r.enterWith(at, "ep.bad", "gina", Holder{Subjects: 1 << 5}); res.Outcome != OutcomeInvalid {
		t.Fatalf("a malformed holder: %s", res.Outcome)
	}
	// The pause is answered before the cap.
	_, r.log = r.m.Pause(at, r.log)
	if res := r.enterWith(at, "ep.carol", "carol", device(7, 0)); res.Outcome != OutcomePaused {
		t.Fatalf("carol while paused: %s", res.Outcome)
	}
	_, r.log = r.m.Resume(at, r.log)
	checkSame(t, r.m, r.log)

	restored, err := DecodeState(encodeFrozen(t, r.m.Freeze()))
	if err != nil {
		t.Fatal(err)
	}
	for name, m := range map[string]*Machine{"replay": replay(t, r.log), "snapshot": restored} {
		if res, _ := m.Enter(at, "ep.carol", "carol", device(7, 0), nil); res.Outcome != OutcomeSubjectLimit {
			t.Errorf("%s: carol %s, want SUBJECT_LIMIT", name, res.Outcome)
		}
		if res, _ := m.Enter(at, "ep.gina", "gina", device(9, 0), nil); res.Outcome != OutcomeEntered {
			t.Errorf("%s: gina on a fresh device %s", name, res.Outcome)
		}
	}
	// The entries close first: ENTRIES_CLOSED, not SUBJECT_LIMIT.
	if res := r.enterWith(lotClose, "ep.carol", "carol", device(7, 0)); res.Outcome != OutcomeEntriesClosed {
		t.Fatalf("carol after the close: %s", res.Outcome)
	}
}

// TestLotteryWinnerGetsPassWindow: a winner whose pass had risk >= 1 gets
// payment_window_high_risk, the others payment_window; the winners count
// among the unpaid per subject key; the high-risk winner expires at its own
// expire_at; replay and a decoded snapshot keep all of it.
func TestLotteryWinnerGetsPassWindow(t *testing.T) {
	r := newLottery(t, lotteryCapDefinition())
	r.enterWith(lotOpen+1, "ep.alice", "alice", device(7, 1))
	r.enterWith(lotOpen+2, "ep.bob", "bob", device(7, 0))
	r.enter(lotOpen+3, "frank", "frank", 1)
	r.draw(lotRoundT)
	windows := map[string]int64{"ep.alice": 20_000, "ep.bob": lotWindow, "frank": lotWindow}
	for request, window := range windows {
		v, ok := r.m.EntryByRequest(request)
		if !ok || v.Status != EntryWon {
			t.Fatalf("%s: %v %s", request, ok, v.Status)
		}
		if got := v.Reservation.ExpireAt - v.Reservation.CreatedAt; got != window {
			t.Errorf("%s won a window of %d ms, want %d", request, got, window)
		}
		for _, rec := range r.log {
			if rec.Type == RecordWon && rec.Lot.EntrySeq == v.EntrySeq && rec.ExpireAt != v.Reservation.ExpireAt {
				t.Errorf("%s: WON records expire_at %d, the reservation has %d", request, rec.ExpireAt, v.Reservation.ExpireAt)
			}
		}
	}
	if n := r.m.UnpaidBySubject(0, SubjectKey{7}); n != 2 {
		t.Fatalf("device 7 has %d unpaid winners, want 2", n)
	}
	checkSame(t, r.m, r.log)
	for _, m := range []*Machine{r.m, replay(t, r.log)} {
		alice, _ := m.EntryByRequest("ep.alice")
		if m.Expire(alice.Reservation.ExpireAt-1, 64, nil) != nil {
			t.Fatal("a reservation expired before alice's expire_at")
		}
	}
	alice, _ := r.m.EntryByRequest("ep.alice")
	r.log = r.m.Expire(alice.Reservation.ExpireAt, 64, r.log)
	alice, _ = r.m.EntryByRequest("ep.alice")
	bob, _ := r.m.EntryByRequest("ep.bob")
	if alice.Reservation.State != StateClosed || bob.Reservation.State != StatePendingPayment {
		t.Fatalf("at alice's expire_at: alice %s, bob %s", alice.Reservation.State, bob.Reservation.State)
	}
	if n := r.m.UnpaidBySubject(0, SubjectKey{7}); n != 1 {
		t.Fatalf("device 7 has %d unpaid winners after alice's expiry, want 1", n)
	}
	checkSame(t, r.m, r.log)
}

// TestEnteredPassGroupIsTrailing: an ENTERED record without a pass's risk
// or subject keys is the layout older versions wrote; one with them adds
// the trailing group, which decodes back; an empty group, bad flags or a
// short key are refused.
func TestEnteredPassGroupIsTrailing(t *testing.T) {
	old := binary.AppendVarint(nil, 5)
	old = append(old, 1, 3, 1, 'r', 1, 'u') // entry_seq 1, tier 3, str r, str u
	plain := Record{Type: RecordEntered, At: 5, Seq: 1, RequestID: "r", UserID: "u", Holder: Holder{Tier: 3}, Lot: &LotteryFields{}}
	if got := plain.AppendPayload(nil); !bytes.Equal(got, old) {
		t.Fatalf("ENTERED without a pass group: %x, older versions wrote %x", got, old)
	}
	withPass := plain
	withPass.Holder = Holder{Tier: 3, Risk: 1, Subjects: 0b1001, Keys: [SubjectKindCount]SubjectKey{{1, 2, 3, 4, 5, 6, 7, 8}, {}, {}, {9}}}
	payload := withPass.AppendPayload(nil)
	want := append(append([]byte(nil), old...), 1, 0b1001, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0, 0, 0, 0, 0)
	if !bytes.Equal(payload, want) {
		t.Fatalf("ENTERED with a pass group: %x, want %x", payload, want)
	}
	for name, p := range map[string][]byte{"old": old, "with pass": payload} {
		r, err := DecodeRecord(RecordEntered, p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if w := map[string]Holder{"old": plain.Holder, "with pass": withPass.Holder}[name]; r.Holder != w {
			t.Fatalf("%s decodes to %+v, want %+v", name, r.Holder, w)
		}
	}
	for name, tail := range map[string][]byte{
		"empty group": {0, 0},
		"bad flags":   {0, 0x10},
		"short key":   {0, 1, 1, 2},
		"risk only":   {1},
	} {
		if _, err := DecodeRecord(RecordEntered, append(append([]byte(nil), old...), tail...)); !errors.Is(err, ErrBadRecord) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestLotteryEntryPassesSection: a state whose winners hold their entry's
// pass is refused without its entry passes section (tag 7), and with
// its rows out of order.
func TestLotteryEntryPassesSection(t *testing.T) {
	r := newLottery(t, lotteryCapDefinition())
	r.enterWith(lotOpen+1, "ep.alice", "alice", device(7, 1))
	r.enterWith(lotOpen+2, "ep.bob", "bob", device(8, 0))
	r.draw(lotRoundT)
	f := r.m.Freeze()
	state := encodeFrozen(t, f)
	var buf bytes.Buffer
	e := stateEncoder{w: &buf}
	e.encodeEntryPasses(f)
	e.flush()
	section := buf.Bytes()
	if len(section) == 0 || section[0] != lotteryEntryPassesTag || !bytes.HasSuffix(state, section) {
		t.Fatalf("the state does not end with its entry passes section %x", section)
	}
	cut := state[:len(state)-len(section)]
	if _, err := DecodeState(cut); !errors.Is(err, ErrBadState) {
		t.Fatalf("without the entry passes section: %v", err)
	}
	// Rows: n=2, (delta 1, risk 1, flags 1, key 7), (delta 1, risk 0, flags 1, key 8).
	swapped := bytes.Clone(section)
	if swapped[2] != 1 || swapped[13] != 1 {
		t.Fatalf("unexpected section layout %x", section)
	}
	swapped[13] = 0 // the second row's delta: the same entry again
	if _, err := DecodeState(append(bytes.Clone(cut), swapped...)); !errors.Is(err, ErrBadState) {
		t.Fatalf("a repeated entry in the section: %v", err)
	}
	if _, err := DecodeState(state); err != nil {
		t.Fatal(err)
	}
}

// TestLotteryBeforeEntryPassesLoads: a lottery's log and snapshot written
// before entries kept their pass's risk and subject keys
// (testdata/lottery_before_entry_passes.txt: a definition capping one
// unpaid reservation per subject with a high-risk window, four entries, a
// draw of two) replay and load; their entries count as entries without a
// pass (no subject counts, winners with payment_window); the records and
// the state encode again byte for byte as they were written.
func TestLotteryBeforeEntryPassesLoads(t *testing.T) {
	file, err := os.Open("testdata/lottery_before_entry_passes.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	m := New()
	var state []byte
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		kind, payloadHex, _ := strings.Cut(sc.Text(), " ")
		payload, err := hex.DecodeString(payloadHex)
		if err != nil {
			t.Fatal(err)
		}
		if kind == "state" {
			state = payload
			continue
		}
		typ, err := strconv.Atoi(kind)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := DecodeRecord(RecordType(typ), payload)
		if err != nil {
			t.Fatalf("%s record: %v", RecordType(typ), err)
		}
		if again := rec.AppendPayload(nil); !bytes.Equal(again, payload) {
			t.Fatalf("%s record encodes as %x, was %x", rec.Type, again, payload)
		}
		if err := m.Apply(&rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	restored, err := DecodeState(state)
	if err != nil {
		t.Fatal(err)
	}
	if restored.Hash() != m.Hash() {
		t.Fatal("the old snapshot and the old log give other states")
	}
	if again := encodeFrozen(t, m.Freeze()); !bytes.Equal(again, state) {
		t.Fatalf("the replayed state encodes as\n%x\nthe old snapshot is\n%x", again, state)
	}
	for _, x := range []*Machine{m, restored} {
		if a := x.Audit(); !a.OK() {
			t.Fatal(a.Violations)
		}
		if x.lot.holders.rows != nil || x.lot.subjects.size() != 0 || len(x.holders.rows) != 0 {
			t.Fatal("old entries hold subject keys")
		}
		for _, w := range x.lot.won {
			if x.table.expireAt(w.reservation)-x.table.createdAt(w.reservation) != lotWindow {
				t.Fatalf("winner %d's window is not payment_window", w.entry)
			}
		}
	}
}

// lotteryPassesState is the encoded state of a drawn lottery whose
// entries carried passes (a high-risk one, one with two kinds of key, one
// of tier alone): a seed of FuzzDecodeState.
func lotteryPassesState(t testing.TB) []byte {
	r := newLottery(t, lotteryCapDefinition())
	r.enterWith(lotOpen+1, "ep.a", "a", device(7, 1))
	r.enterWith(lotOpen+2, "ep.b", "b", Holder{Tier: 1, Subjects: 0b1001, Keys: [SubjectKindCount]SubjectKey{{8}, {}, {}, {9}}})
	r.enter(lotOpen+3, "c", "c", 2)
	r.draw(lotRoundT)
	return encodeFrozen(t, r.m.Freeze())
}

// The entry passes section is written only when an entry has a pass group:
// a section listing no entry would decode to the state written without it,
// one state with two encodings (and two hashes of the same state).
func TestEmptyEntryPassesSectionIsRefused(t *testing.T) {
	r := newLottery(t, lotteryDef(10, 0))
	r.enter(lotOpen+1, "a", "a", 1)
	b := encodeFrozen(t, r.m.Freeze())
	if _, err := DecodeState(b); err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeState(append(b, lotteryEntryPassesTag, 0)); err == nil {
		t.Fatal("an entry passes section of no entry decoded")
	}
}
