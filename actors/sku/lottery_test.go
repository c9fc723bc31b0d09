package sku

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/seckill/seckill/lottery"
)

// Lottery test times: entries open at quicknet's genesis, close a minute
// later, and round 31 is published 90 s after genesis.
const (
	lotOpen   = lottery.QuicknetGenesis * 1000
	lotClose  = lotOpen + 60_000
	lotRound  = 31
	lotRoundT = lotOpen + 90_000
	lotWindow = 60_000
)

func lotteryDef(saleLimit, waitlist uint32, tiers ...lottery.Quota) Definition {
	return Definition{CampaignID: "c1", SKUID: "lot", StartAt: lotOpen, EndAt: lotOpen + 1e9, PaymentWindowMs: lotWindow,
		SaleLimit: saleLimit, ReleaseOnClose: true, IDKey: [16]byte{7},
		Lottery: &LotteryRules{EntriesOpenAt: lotOpen, EntriesCloseAt: lotClose,
			Beacon:   lottery.Beacon{Source: lottery.SourceDrandQuicknet, Round: lotRound},
			Waitlist: waitlist, Tiers: tiers,
			ServerSeed: sha256.Sum256([]byte("server")), PseudonymKey: sha256.Sum256([]byte("pseudonyms"))}}
}

var randomness = sha256.Sum256([]byte("beacon"))

// lotteryRun is a Machine and its log.
type lotteryRun struct {
	t   testing.TB
	m   *Machine
	log []Record
}

func newLottery(t testing.TB, d Definition) *lotteryRun {
	r := &lotteryRun{t: t, m: New()}
	var err error
	if _, r.log, err = r.m.Define(lotOpen-1000, d, nil); err != nil {
		t.Fatal(err)
	}
	if len(r.log) != 2 || r.log[1].Type != RecordLotteryCommitted || r.log[0].Def.Lottery != nil {
		t.Fatalf("define wrote %v", r.log)
	}
	return r
}

func (r *lotteryRun) enter(now int64, req, user string, tier uint8) EntryResult {
	return r.enterWith(now, req, user, Holder{Tier: tier})
}

// enterWith enters with the holder of an entry pass.
func (r *lotteryRun) enterWith(now int64, req, user string, h Holder) EntryResult {
	var res EntryResult
	res, r.log = r.m.Enter(now, req, user, h, r.log)
	return res
}

// draw starts the draw at now, ranks a frozen copy and records it all.
func (r *lotteryRun) draw(now int64) *DrawRanking {
	var o Outcome
	o, r.log = r.m.StartDraw(now, lotRound, randomness[:], nil, r.log)
	if o != OutcomeDrawStarted {
		r.t.Fatalf("draw: %s", o)
	}
	rk, ok := r.m.Freeze().RankDraw()
	if !ok {
		r.t.Fatal("no pending draw")
	}
	for done := false; !done; {
		r.log, done = r.m.RecordDraw(now, rk, 0, r.log)
	}
	return rk
}

// replay decodes the log's records from their bytes into a new Machine.
func replay(t testing.TB, log []Record) *Machine {
	t.Helper()
	m := New()
	for i := range log {
		rec, err := DecodeRecord(log[i].Type, log[i].AppendPayload(nil))
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if !reflect.DeepEqual(rec, log[i]) {
			t.Fatalf("record %d does not round-trip:\n%+v\n%+v", i, rec, log[i])
		}
		if err := m.Apply(&rec); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	return m
}

// checkSame: replay and a decoded snapshot give the live Machine's hash,
// and every audit is clean.
func checkSame(t testing.TB, m *Machine, log []Record) {
	t.Helper()
	if a := m.Audit(); !a.OK() {
		t.Fatalf("audit: %v", a.Violations)
	}
	again := replay(t, log)
	if again.Hash() != m.Hash() {
		t.Fatal("replay gives another state hash")
	}
	restored, err := DecodeState(encodeFrozen(t, m.Freeze()))
	if err != nil {
		t.Fatal(err)
	}
	if restored.Hash() != m.Hash() {
		t.Fatal("a decoded snapshot gives another state hash")
	}
	if a := restored.Audit(); !a.OK() {
		t.Fatalf("restored audit: %v", a.Violations)
	}
}

func TestLotteryLifecycle(t *testing.T) {
	r := newLottery(t, lotteryDef(5, 3))
	m := r.m
	if res := r.enter(lotOpen-1, "early", "u0", 0); res.Outcome != OutcomeEntriesNotOpen {
		t.Fatalf("early entry: %s", res.Outcome)
	}
	for i := 1; i <= 20; i++ {
		res := r.enter(lotOpen+int64(i), fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i), 0)
		if res.Outcome != OutcomeEntered || res.Duplicate || res.Entry.EntrySeq != uint32(i) {
			t.Fatalf("entry %d: %+v", i, res)
		}
	}
	if res := r.enter(lotOpen+30, "r3", "u3", 0); !res.Duplicate || res.Entry.EntrySeq != 3 {
		t.Fatalf("repeat: %+v", res)
	}
	if res := r.enter(lotOpen+30, "other", "u3", 0); !res.Duplicate || res.Entry.EntrySeq != 3 {
		t.Fatalf("same user, new request_id: %+v", res)
	}
	if res := r.enter(lotOpen+30, "r3", "u99", 0); res.Outcome != OutcomeRequestIDReused {
		t.Fatalf("request_id of another user: %s", res.Outcome)
	}
	if res, _ := m.Reserve(lotOpen+30, "plain", "u50", nil); res.Outcome != OutcomeLotterySale {
		t.Fatalf("plain reserve: %s", res.Outcome)
	}
	if o, _ := m.StartDraw(lotOpen+40, lotRound, randomness[:], nil, nil); o != OutcomeEntriesOpen {
		t.Fatalf("draw while open: %s", o)
	}
	n := len(r.log)
	if res := r.enter(lotClose, "late", "late", 0); res.Outcome != OutcomeEntriesClosed {
		t.Fatalf("late entry: %s", res.Outcome)
	}
	if len(r.log) != n+1 || r.log[n].Type != RecordEntriesClosed || r.log[n].Lot.Count != 20 {
		t.Fatalf("close: %+v", r.log[n:])
	}
	if res := r.enter(lotClose+5, "late2", "late2", 0); res.Outcome != OutcomeEntriesClosed || len(r.log) != n+1 {
		t.Fatalf("second late entry: %s, %d records", res.Outcome, len(r.log)-n)
	}
	for _, c := range []struct {
		now   int64
		round uint64
		rnd   []byte
		want  Outcome
	}{
		{lotRoundT, lotRound, randomness[:31], OutcomeInvalid},
		{lotRoundT, lotRound + 1, randomness[:], OutcomeWrongRound},
		{lotRoundT - 1, lotRound, randomness[:], OutcomeBeaconNotDue},
	} {
		if o, out := m.StartDraw(c.now, c.round, c.rnd, nil, nil); o != c.want || len(out) != 0 {
			t.Fatalf("draw %+v: %s with %d records", c, o, len(out))
		}
	}
	// The pool export is exactly what entries_root hashes.
	var pool bytes.Buffer
	if _, err := m.Freeze().WritePool(&pool); err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(pool.Bytes()) != r.log[n].Lot.Root {
		t.Fatal("the exported pool does not hash to entries_root")
	}
	rk := r.draw(lotRoundT)
	if o, _ := m.StartDraw(lotRoundT+1, lotRound, randomness[:], nil, nil); o != OutcomeAlreadyDrawn {
		t.Fatalf("second draw: %s", o)
	}
	// The recorded draw is the rules' ranking of the exported pool.
	entries, err := lottery.ParsePool(pool.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	d := lotteryDef(5, 3)
	seed := lottery.Seed("c1", "lot", d.Lottery.ServerSeed, randomness[:], lottery.EntriesRoot(entries))
	want := lottery.Draw(seed, entries, lottery.Rules{Units: 5, Waitlist: 3})
	if !slices.Equal(rk.Winners, want.Winners) || !slices.Equal(rk.Waitlist, want.Waitlist) {
		t.Fatalf("ranking %v %v, rules say %v %v", rk.Winners, rk.Waitlist, want.Winners, want.Waitlist)
	}
	// Winners hold tokens 1..5 in rank order; the others are waitlisted or lost.
	for i, e := range want.Winners {
		v, _ := m.EntryByRequest(fmt.Sprintf("r%d", e))
		if v.Status != EntryWon || v.Reservation.TokenID != uint32(i+1) || v.Reservation.State != StatePendingPayment ||
			v.Reservation.ExpireAt != lotRoundT+lotWindow {
			t.Fatalf("winner %d: %+v", e, v)
		}
	}
	for i, e := range want.Waitlist {
		if v, _ := m.EntryByRequest(fmt.Sprintf("r%d", e)); v.Status != EntryWaitlisted || v.Position != uint32(i+1) {
			t.Fatalf("waitlisted %d: %+v", e, v)
		}
	}
	for _, e := range want.Lost {
		if v, _ := m.EntryByRequest(fmt.Sprintf("r%d", e)); v.Status != EntryLost {
			t.Fatalf("lost %d: %+v", e, v)
		}
	}
	info, _ := m.Freeze().LotteryInfo(lotRoundT)
	if info.Phase != PhaseDrawn || info.Seed != seed || info.WinnersRoot != lottery.ListRoot(want.Winners) || info.EntryCount != 20 {
		t.Fatalf("info: %+v", info)
	}
	checkSame(t, m, r.log)
	// A winner cancels: the first waitlisted entrant gets the token.
	v, _ := m.EntryByRequest(fmt.Sprintf("r%d", want.Winners[2]))
	_, _, seqOf, _, _ := ParseReservationID(v.Reservation.ReservationID)
	var res Result
	res, r.log = m.Close(lotRoundT+10, seqOf, ReasonCancelled, r.log)
	if res.Outcome != OutcomeClosed {
		t.Fatal(res.Outcome)
	}
	p, _ := m.EntryByRequest(fmt.Sprintf("r%d", want.Waitlist[0]))
	if p.Status != EntryWon || p.Reservation.TokenID != 3 || p.Reservation.ExpireAt != lotRoundT+10+lotWindow {
		t.Fatalf("promoted: %+v", p)
	}
	if q, _ := m.EntryByRequest(fmt.Sprintf("r%d", want.Waitlist[1])); q.Position != 1 {
		t.Fatalf("next waitlisted: %+v", q)
	}
	checkSame(t, m, r.log)
}

// TestLotteryDrawResumesAfterCrash: a restart after any prefix of the
// draw's records ranks again and records the same winners and waitlist.
func TestLotteryDrawResumesAfterCrash(t *testing.T) {
	full := newLottery(t, lotteryDef(40, 30))
	for i := 1; i <= 100; i++ {
		full.enter(lotOpen+int64(i), fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i), 0)
	}
	start := len(full.log)
	full.draw(lotRoundT)
	for cut := start; cut <= len(full.log); cut++ {
		m := replay(t, full.log[:cut])
		log := slices.Clone(full.log[:cut])
		if !m.lot.drawStarted { // crashed before the draw was recorded: the operator draws again
			var o Outcome
			if o, log = m.StartDraw(lotRoundT, lotRound, randomness[:], nil, log); o != OutcomeDrawStarted {
				t.Fatal(o)
			}
		}
		if m.DrawPending() {
			rk, _ := m.Freeze().RankDraw()
			for done := false; !done; {
				log, done = m.RecordDraw(lotRoundT, rk, 0, log)
			}
		}
		if m.Hash() != full.m.Hash() {
			t.Fatalf("restart after %d of %d records: another state", cut-start, len(full.log)-start)
		}
	}
}

// A ranking of a draw a crash lost (frozen before its DRAW_STARTED was
// durable) ranks nothing once the operator draws again with other
// randomness: RanksDraw refuses it, RecordDraw records nothing from it and
// reports the draw not done; the new draw's own ranking records it.
func TestLotteryRankingOfALostDrawIsStale(t *testing.T) {
	r := newLottery(t, lotteryDef(5, 3))
	for i := 1; i <= 20; i++ {
		r.enter(lotOpen+int64(i), fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i), 0)
	}
	before := slices.Clone(r.log)
	var o Outcome
	if o, r.log = r.m.StartDraw(lotRoundT, lotRound, randomness[:], nil, r.log); o != OutcomeDrawStarted {
		t.Fatal(o)
	}
	lost, _ := r.m.Freeze().RankDraw()
	if !r.m.RanksDraw(lost) {
		t.Fatal("RanksDraw refuses the pending draw's own ranking")
	}

	m := replay(t, before) // the crash lost DRAW_STARTED
	if m.RanksDraw(lost) {
		t.Fatal("RanksDraw accepts a ranking with no draw pending")
	}
	other := sha256.Sum256([]byte("another beacon value"))
	log := slices.Clone(before)
	if o, log = m.StartDraw(lotRoundT, lotRound, other[:], nil, log); o != OutcomeDrawStarted {
		t.Fatal(o)
	}
	if m.RanksDraw(lost) {
		t.Fatal("RanksDraw accepts the lost draw's ranking for the new draw")
	}
	n := len(log)
	var done bool
	if log, done = m.RecordDraw(lotRoundT, lost, 0, log); len(log) != n || done {
		t.Fatalf("the lost draw's ranking recorded %d records, done %v", len(log)-n, done)
	}
	rk, _ := m.Freeze().RankDraw()
	if !m.RanksDraw(rk) {
		t.Fatal("RanksDraw refuses the new draw's ranking")
	}
	for !done {
		log, done = m.RecordDraw(lotRoundT, rk, 0, log)
	}
	if m.DrawPending() || log[len(log)-1].Type != RecordDrawDone {
		t.Fatal("the new draw was not recorded")
	}
	checkSame(t, m, log)
}

// TestLotteryWaitlistPromotion is the case: 100 units, 10,000
// entrants; 10 winners let their reservations expire and the next 10 in
// rank order get their tokens.
func TestLotteryWaitlistPromotion(t *testing.T) {
	r := newLottery(t, lotteryDef(100, 100))
	for i := 1; i <= 10_000; i++ {
		r.enter(lotOpen+int64(i%50_000), fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i), 0)
	}
	rk := r.draw(lotRoundT)
	m := r.m
	unpaid := map[uint32]bool{}
	for i, e := range rk.Winners {
		if i%10 == 3 {
			unpaid[e] = true
			continue
		}
		v, _ := m.EntryByRequest(fmt.Sprintf("r%d", e))
		_, _, seq, _, _ := ParseReservationID(v.Reservation.ReservationID)
		var res Result
		res, r.log = m.Pay(lotRoundT+5, seq, fmt.Sprintf("p%d", e), 100, r.log)
		if res.Outcome != OutcomePaid {
			t.Fatal(res.Outcome)
		}
	}
	expireAt := int64(lotRoundT + lotWindow)
	r.log = m.Expire(expireAt, 1000, r.log)
	if c := m.Counts(); c.Closed != 10 || c.PendingPayment != 10 || c.Paid != 90 {
		t.Fatalf("counts %+v", c)
	}
	for i, e := range rk.Waitlist {
		v, _ := m.EntryByRequest(fmt.Sprintf("r%d", e))
		if i < 10 && (v.Status != EntryWon || v.Reservation.ExpireAt != expireAt+lotWindow) {
			t.Fatalf("waitlisted %d (position %d): %+v", e, i+1, v)
		}
		if i >= 10 && (v.Status != EntryWaitlisted || v.Position != uint32(i-9)) {
			t.Fatalf("waitlisted %d (position %d): %+v", e, i+1, v)
		}
	}
	checkSame(t, m, r.log)
}

// TestLotteryTiers: quotas by tier reach the reservations.
func TestLotteryTiers(t *testing.T) {
	r := newLottery(t, lotteryDef(10, 0, lottery.Quota{Tier: 2, Count: 4}, lottery.Quota{Tier: 0, Rest: true}))
	for i := 1; i <= 60; i++ {
		r.enter(lotOpen+int64(i), fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i), uint8(i%3))
	}
	rk := r.draw(lotRoundT)
	tier2 := 0
	for _, e := range rk.Winners {
		if e%3 == 2 {
			tier2++
		}
	}
	if len(rk.Winners) != 10 || tier2 < 4 {
		t.Fatalf("winners %v: %d of tier 2", rk.Winners, tier2)
	}
	checkSame(t, r.m, r.log)
}

// TestLotteryDefinitionRules: a lottery's rules and sale_limit never
// change, a plain SKU never becomes a lottery, and the beacon round must
// come after the close.
func TestLotteryDefinitionRules(t *testing.T) {
	r := newLottery(t, lotteryDef(5, 3))
	same := lotteryDef(5, 3)
	same.Lottery.ServerSeed, same.Lottery.PseudonymKey = lottery.Hash{}, lottery.Hash{}
	if o, out, err := r.m.Define(lotOpen, same, nil); o != OutcomeOK || len(out) != 0 || err != nil {
		t.Fatalf("same definition: %s %d %v", o, len(out), err)
	}
	more := lotteryDef(6, 3)
	if _, _, err := r.m.Define(lotOpen, more, nil); err == nil {
		t.Fatal("sale_limit changed")
	}
	other := lotteryDef(5, 4)
	if _, _, err := r.m.Define(lotOpen, other, nil); err == nil {
		t.Fatal("waitlist changed")
	}
	plain := lotteryDef(5, 3)
	plain.Lottery = nil
	if _, _, err := r.m.Define(lotOpen, plain, nil); err == nil {
		t.Fatal("lottery dropped")
	}
	later := lotteryDef(5, 3)
	later.EndAt += 1000
	if o, out, err := r.m.Define(lotOpen, later, nil); o != OutcomeOK || len(out) != 1 || err != nil {
		t.Fatalf("end_at extended: %s %v", o, err)
	} else {
		r.log = append(r.log, out...)
	}
	checkSame(t, r.m, r.log)
	early := lotteryDef(5, 3)
	early.Lottery.Beacon.Round = 10 // published before the close
	if err := early.Validate(); err == nil {
		t.Fatal("a round before the close")
	}
	m := New()
	if _, _, err := m.Define(lotClose, lotteryDef(5, 3), nil); err == nil {
		t.Fatal("a lottery defined after its close")
	}
	p := New()
	pd := lotteryDef(5, 3)
	pd.Lottery = nil
	p.Define(lotOpen, pd, nil)
	if _, _, err := p.Define(lotOpen, lotteryDef(5, 3), nil); err == nil {
		t.Fatal("a plain SKU became a lottery")
	}
}

// TestLotteryRecordsRefused: records that break the rules do not apply.
func TestLotteryRecordsRefused(t *testing.T) {
	r := newLottery(t, lotteryDef(5, 3))
	for i := 1; i <= 10; i++ {
		r.enter(lotOpen+int64(i), fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i), 0)
	}
	base := slices.Clone(r.log)
	r.draw(lotRoundT)
	bad := map[string][]Record{
		"entry after the close": append(slices.Clone(base),
			Record{Type: RecordEntriesClosed, At: lotClose, Lot: &LotteryFields{Count: 10, Root: r.m.lot.entriesRoot}},
			Record{Type: RecordEntered, At: lotClose + 1, Seq: 11, RequestID: "x", UserID: "x", Lot: &LotteryFields{}}),
		"wrong root": append(slices.Clone(base),
			Record{Type: RecordEntriesClosed, At: lotClose, Lot: &LotteryFields{Count: 10, Root: lottery.Hash{1}}}),
		"draw before close": append(slices.Clone(base),
			Record{Type: RecordDrawStarted, At: lotRoundT, Lot: &LotteryFields{Round: lotRound}}),
		"user twice": append(slices.Clone(base),
			Record{Type: RecordEntered, At: lotOpen + 20, Seq: 11, RequestID: "y", UserID: "u1", Lot: &LotteryFields{}}),
	}
	for name, log := range bad {
		m := New()
		var err error
		for i := range log {
			if err = m.Apply(&log[i]); err != nil {
				break
			}
		}
		if err == nil {
			t.Errorf("%s: applied", name)
		}
	}
}

// TestLotteryEndsAtEndAt: at end_at a drawn lottery ends (one
// LOTTERY_ENDED, by the tick or by a token coming back), those still
// waiting lose, no token goes to them afterwards, and replay and a snapshot
// agree.
func TestLotteryEndsAtEndAt(t *testing.T) {
	d := lotteryDef(3, 5)
	d.EndAt = lotRoundT + 10*lotWindow
	r := newLottery(t, d)
	for i := 1; i <= 20; i++ {
		r.enter(lotOpen+int64(i), fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i), 0)
	}
	rk := r.draw(lotRoundT)
	m := r.m
	// The winners' reservations expire before end_at: the first three
	// waitlisted entrants are promoted, two still wait.
	r.log = m.Expire(lotRoundT+lotWindow, 1000, r.log)
	if v, _ := m.EntryByRequest(fmt.Sprintf("r%d", rk.Waitlist[2])); v.Status != EntryWon {
		t.Fatalf("third waitlisted before end_at: %+v", v)
	}
	n := len(r.log)
	if r.log = m.LotteryTick(d.EndAt-1, r.log); len(r.log) != n {
		t.Fatalf("a tick before end_at wrote %v", r.log[n:])
	}
	r.log = m.LotteryTick(d.EndAt, r.log)
	if len(r.log) != n+1 || r.log[n].Type != RecordLotteryEnded || r.log[n].Lot.Count != 2 || r.log[n].At != d.EndAt {
		t.Fatalf("tick at end_at wrote %+v", r.log[n:])
	}
	if r.log = m.LotteryTick(d.EndAt+5, r.log); len(r.log) != n+1 {
		t.Fatal("the lottery ended twice")
	}
	for i, e := range rk.Waitlist[3:] {
		if v, _ := m.EntryByRequest(fmt.Sprintf("r%d", e)); v.Status != EntryLost {
			t.Fatalf("waitlisted %d (position %d) after end_at: %+v", e, i+4, v)
		}
	}
	// A token that comes back after end_at stays available.
	r.log = m.Expire(d.EndAt+lotWindow, 1000, r.log)
	for _, rec := range r.log[n+1:] {
		if rec.Type == RecordWon {
			t.Fatalf("a promotion after end_at: %+v", rec)
		}
	}
	if c := m.Counts(); c.PendingPayment != 0 || c.Available != 3 {
		t.Fatalf("counts after end_at %+v", c)
	}
	if info, _ := m.Freeze().LotteryInfo(d.EndAt + lotWindow); !info.Ended || info.EndedAt != d.EndAt || info.Promoted != 3 {
		t.Fatalf("info %+v", info)
	}
	checkSame(t, m, r.log)
	beforeClose := n

	// A token coming back at or after end_at closes it too, without the tick.
	r2 := newLottery(t, d)
	for i := 1; i <= 20; i++ {
		r2.enter(lotOpen+int64(i), fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i), 0)
	}
	r2.draw(lotRoundT)
	n = len(r2.log)
	r2.log = r2.m.Expire(d.EndAt+1, 1000, r2.log)
	var types []RecordType
	for _, rec := range r2.log[n:] {
		types = append(types, rec.Type)
	}
	if !slices.Contains(types, RecordLotteryEnded) || slices.Contains(types, RecordWon) {
		t.Fatalf("records after end_at: %v", types)
	}
	checkSame(t, r2.m, r2.log)

	// A closure the rules do not allow does not apply.
	bad := Record{Type: RecordLotteryEnded, At: d.EndAt - 1, Lot: &LotteryFields{Count: 2}}
	again := replay(t, r.log[:beforeClose])
	if err := again.Apply(&bad); err == nil {
		t.Fatal("a LOTTERY_ENDED before end_at applied")
	}
	bad.At, bad.Lot.Count = d.EndAt, 3
	if err := again.Apply(&bad); err == nil {
		t.Fatal("a LOTTERY_ENDED with a wrong count applied")
	}
	bad.Lot.Count = 2
	if err := again.Apply(&bad); err != nil {
		t.Fatalf("the LOTTERY_ENDED the tick wrote: %v", err)
	}
	bad.At++
	if err := again.Apply(&bad); err == nil {
		t.Fatal("a second LOTTERY_ENDED applied")
	}
}

// TestLotteryEndsUndrawn: a lottery not drawn by end_at ends (the tick, or
// a draw asked too late, writes LOTTERY_ENDED): every entry lost, no draw
// after it, no entry either; and a definition whose beacon round comes at
// or after end_at is refused.
func TestLotteryEndsUndrawn(t *testing.T) {
	d := lotteryDef(3, 2)
	late := d
	late.EndAt = lotRoundT
	if _, _, err := New().Define(lotOpen-1000, late, nil); !errors.Is(err, ErrInvalidDefinition) {
		t.Fatalf("a round at end_at: %v", err)
	}
	d.EndAt = lotRoundT + 1000
	for _, by := range []string{"tick", "draw", "redefine"} {
		r := newLottery(t, d)
		for i := 1; i <= 5; i++ {
			r.enter(lotOpen+int64(i), fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i), 0)
		}
		n := len(r.log)
		switch by {
		case "tick":
			r.log = r.m.LotteryTick(d.EndAt, r.log)
		case "redefine": // a later end_at asked after end_at: the lottery ended first
			later := d
			later.EndAt += 3_600_000
			var err error
			if _, r.log, err = r.m.Define(d.EndAt, later, r.log); err != nil {
				t.Fatal(err)
			}
			if r.log[len(r.log)-1].Type != RecordDefine {
				t.Fatalf("redefine wrote %v", r.log[n:])
			}
		default:
			var o Outcome
			o, r.log = r.m.StartDraw(d.EndAt, lotRound, randomness[:], nil, r.log)
			if o != OutcomeEnded {
				t.Fatalf("a draw at end_at: %s", o)
			}
		}
		if len(r.log) < n+2 || r.log[n].Type != RecordEntriesClosed || r.log[n+1].Type != RecordLotteryEnded || r.log[n+1].Lot.Count != 5 {
			t.Fatalf("%s at end_at wrote %v", by, r.log[n:])
		}
		if v, _ := r.m.EntryByRequest("r3"); v.Status != EntryLost {
			t.Fatalf("an entry after the end: %+v", v)
		}
		if info, _ := r.m.Freeze().LotteryInfo(d.EndAt); info.Phase != PhaseEnded || !info.Ended || info.EndedAt != d.EndAt {
			t.Fatalf("info %+v", info)
		}
		if o, _ := r.m.StartDraw(d.EndAt+1, lotRound, randomness[:], nil, nil); o != OutcomeEnded {
			t.Fatalf("a draw after the end: %s", o)
		}
		if len(r.m.LiveEntries()) != 0 {
			t.Fatalf("live entries after the end: %v", r.m.LiveEntries())
		}
		checkSame(t, r.m, r.log)
	}
}

// TestLotteryEndedStateAfterLaterEndAt: a state written after the lottery
// ended and end_at was moved later decodes (the end was recorded under the
// end_at of its time).
func TestLotteryEndedStateAfterLaterEndAt(t *testing.T) {
	d := lotteryDef(1, 2)
	d.EndAt = lotRoundT + 10*lotWindow
	r := newLottery(t, d)
	for i := 1; i <= 4; i++ {
		r.enter(lotOpen+int64(i), fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i), 0)
	}
	r.draw(lotRoundT)
	r.log = r.m.LotteryTick(d.EndAt, r.log)
	later := d
	later.EndAt += 3_600_000
	var err error
	if _, r.log, err = r.m.Define(d.EndAt+1, later, r.log); err != nil {
		t.Fatal(err)
	}
	if info, _ := r.m.Freeze().LotteryInfo(later.EndAt); !info.Ended || info.EndedAt != d.EndAt {
		t.Fatalf("info %+v", info)
	}
	checkSame(t, r.m, r.log)
}

// TestLotteryEndAtFixedDuringDraw: once end_at has passed while a draw is
// being recorded, end_at may not move until the draw is done (then the
// lottery ends at the end_at it had).
func TestLotteryEndAtFixedDuringDraw(t *testing.T) {
	d := lotteryDef(1, 2)
	d.EndAt = lotRoundT + 1000
	r := newLottery(t, d)
	for i := 1; i <= 4; i++ {
		r.enter(lotOpen+int64(i), fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i), 0)
	}
	var o Outcome
	if o, r.log = r.m.StartDraw(lotRoundT, lotRound, randomness[:], nil, r.log); o != OutcomeDrawStarted {
		t.Fatal(o)
	}
	later := d
	later.EndAt += 3_600_000
	if _, _, err := r.m.Define(d.EndAt, later, nil); !errors.Is(err, ErrInvalidDefinition) {
		t.Fatalf("end_at moved during a draw past it: %v", err)
	}
	if _, _, err := replay(t, r.log).Define(d.EndAt-1, later, nil); err != nil { // before end_at, on a copy: allowed
		t.Fatalf("end_at moved before it passed: %v", err)
	}
	rk, _ := r.m.Freeze().RankDraw()
	for done := false; !done; {
		r.log, done = r.m.RecordDraw(d.EndAt+5, rk, 0, r.log)
	}
	if last := r.log[len(r.log)-1]; last.Type != RecordLotteryEnded || last.Lot.Count != 2 {
		t.Fatalf("the draw done after end_at: %v", r.log[len(r.log)-3:])
	}
	checkSame(t, r.m, r.log)
}
