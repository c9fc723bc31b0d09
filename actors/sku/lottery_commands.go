package sku

import (
	"bytes"
	"fmt"
	"io"
	"slices"

	"github.com/seckill/seckill/internal/timefmt"
	"github.com/seckill/seckill/lottery"
)

// The lottery commands. Like the others (commands.go) each takes the
// caller's clock reading now (ms), decides, applies the records it makes
// and appends them to out.

// DrawBatch is the default bound on the WON and WAITLISTED records one
// RecordDraw call makes, so one round of the actor has bounded work.
const DrawBatch = 8192

// defineRecords makes the records of an accepted definition: DEFINE, and
// at a lottery's first definition LOTTERY_COMMITTED with its rules and
// secrets (DEFINE never carries them).
func (m *Machine) defineRecords(at int64, d Definition, out []Record) []Record {
	first := !m.defined
	rd := d
	rd.Lottery = nil
	out = m.emit(&Record{Type: RecordDefine, At: at, Def: rd}, out)
	if first && d.Lottery != nil {
		rules := *d.Lottery
		rules.Tiers = slices.Clone(rules.Tiers)
		out = m.emit(&Record{Type: RecordLotteryCommitted, At: at, Def: Definition{Lottery: &rules}}, out)
	}
	return out
}

// checkLotteryDefine refuses what Validate cannot see (CheckLotteryDefine)
// and a first lottery definition whose secrets were not drawn.
func (m *Machine) checkLotteryDefine(at int64, d Definition) error {
	cur := Definition{}
	if m.defined {
		cur = m.def
	}
	if err := CheckLotteryDefine(cur, m.DrawPending(), at, d); err != nil {
		return err
	}
	if !m.defined && d.Lottery != nil && (d.Lottery.ServerSeed == lottery.Hash{} || d.Lottery.PseudonymKey == lottery.Hash{}) {
		return fmt.Errorf("%w: the lottery's server seed and pseudonym key must be drawn", ErrInvalidDefinition)
	}
	return nil
}

// CheckLotteryDefine checks a definition next decided at ms at against the
// SKU's current definition cur (zero for a SKU not defined yet) and
// whether a draw is being recorded (drawing): what neither Validate nor
// CheckRedefine can see. A lottery SKU stays a lottery; a lottery is first
// defined before entries_close_at (the commitment must precede the close);
// and a lottery's end_at, once passed, does not move while its draw is
// being recorded (the lottery ends when the draw is done, at the end_at it
// had: LOTTERY_ENDED). The SKU's Machine decides with it, and the HTTP API
// checks every SKU of a PUT with it before defining any.
func CheckLotteryDefine(cur Definition, drawing bool, at int64, next Definition) error {
	defined := cur.CampaignID != ""
	switch {
	case defined && cur.Lottery != nil && next.Lottery == nil:
		return fmt.Errorf("%w: a lottery SKU stays a lottery", ErrInvalidDefinition)
	case !defined && next.Lottery != nil && at >= next.Lottery.EntriesCloseAt:
		return fmt.Errorf("%w: a lottery must be defined before entries_close_at", ErrInvalidDefinition)
	case defined && drawing && at >= cur.EndAt && next.EndAt != cur.EndAt:
		return fmt.Errorf("%w: end_at %s has passed while the lottery's draw is being recorded: it ends when the draw is done; end_at may change after that",
			ErrInvalidDefinition, timefmt.Millis(cur.EndAt))
	}
	return nil
}

// Lottery reports whether the SKU is a lottery sale.
func (m *Machine) Lottery() bool { return m.lot != nil }

// Enter records userID's entry, once per user, with h, the holder of its
// entry pass (the zero Holder without one): the tier, which the draw's
// quotas read, and the risk level and subject keys, which the winner's
// reservation gets (its payment window, the unpaid counts). A repeat, by
// request_id or by user, answers the original entry with Duplicate set; a
// request_id used by another user answers REQUEST_ID_REUSED. Refusals, not
// recorded: NOT_LOTTERY, INVALID (an id or a malformed h),
// ENTRIES_NOT_OPEN, ENTRIES_CLOSED (closing the entries first when
// entries_close_at has passed), PAUSED, and SUBJECT_LIMIT when
// max_unpaid_per_subject is set and one of h's subject keys already has
// that many entries (overEntryCap): reserve's order, the user's own entry
// answered first.
func (m *Machine) Enter(now int64, requestID, userID string, h Holder, out []Record) (EntryResult, []Record) {
	switch {
	case !m.defined:
		return EntryResult{Outcome: OutcomeNotFound}, out
	case m.lot == nil:
		return EntryResult{Outcome: OutcomeNotLottery}, out
	case !ValidID(requestID) || !ValidID(userID) || h.Validate() != nil:
		return EntryResult{Outcome: OutcomeInvalid}, out
	}
	l := m.lot
	if seq, ok := l.byRequest.get(requestID); ok {
		if l.entries.userID(l.entries.get(seq)) != userID {
			return EntryResult{Outcome: OutcomeRequestIDReused}, out
		}
		return EntryResult{Outcome: OutcomeEntered, Duplicate: true, Entry: m.entryView(seq)}, out
	}
	if seq, ok := l.byUser.get(userID); ok {
		return EntryResult{Outcome: OutcomeEntered, Duplicate: true, Entry: m.entryView(seq)}, out
	}
	at := m.decisionTime(now)
	if at < l.rules.EntriesOpenAt {
		return EntryResult{Outcome: OutcomeEntriesNotOpen}, out
	}
	out = m.closeEntriesIfDue(at, out)
	switch {
	case l.closed || l.ended || l.entries.count >= MaxEntries:
		return EntryResult{Outcome: OutcomeEntriesClosed}, out
	case m.paused:
		return EntryResult{Outcome: OutcomePaused}, out
	case m.overEntryCap(&h):
		return EntryResult{Outcome: OutcomeSubjectLimit}, out
	}
	seq := l.entries.count + 1
	out = m.emit(&Record{Type: RecordEntered, At: at, Seq: seq, RequestID: requestID, UserID: userID, Holder: h, Lot: &LotteryFields{}}, out)
	return EntryResult{Outcome: OutcomeEntered, Entry: m.entryView(seq)}, out
}

// closeEntriesIfDue records ENTRIES_CLOSED once at >= entries_close_at.
func (m *Machine) closeEntriesIfDue(at int64, out []Record) []Record {
	l := m.lot
	if l == nil || l.closed || at < l.rules.EntriesCloseAt {
		return out
	}
	return m.emit(&Record{Type: RecordEntriesClosed, At: at, Lot: &LotteryFields{Count: l.entries.count, Root: l.rooter.Root()}}, out)
}

// LotteryTick closes a lottery's entries once entries_close_at has passed,
// and its waitlist once end_at has (the actor's timer calls it); nothing
// otherwise.
func (m *Machine) LotteryTick(now int64, out []Record) []Record {
	at := m.decisionTime(now)
	return m.endIfDue(at, m.closeEntriesIfDue(at, out))
}

// endIfDue records LOTTERY_ENDED once at >= end_at while entries may
// still win and no draw is being recorded: the sale is over, so no draw
// and no promotion follows; the entries that could still win lose (all
// of them when the lottery was never drawn, the entrants still waiting
// after a draw). Every entry thus ends at a recorded time, which a
// campaign-scope campaign's purchase registry needs (an entry holds its
// user's claim until then).
func (m *Machine) endIfDue(at int64, out []Record) []Record {
	l := m.lot
	if l == nil || at < m.def.EndAt {
		return out
	}
	lost := l.mayStillWin()
	if lost == 0 {
		return out
	}
	out = m.closeEntriesIfDue(at, out) // the pool is closed first, as for a draw
	return m.emit(&Record{Type: RecordLotteryEnded, At: at, Lot: &LotteryFields{Count: lost}}, out)
}

// StartDraw records the draw's inputs: the beacon round (the named one or
// its fallback), its 32-byte randomness and, optionally, the beacon's
// signature of the round (recorded once lottery.CheckSignature accepts it:
// it verifies and the randomness is its SHA-256). It answers DRAW_STARTED,
// or, recording nothing: NOT_LOTTERY, INVALID (randomness not 32 bytes, or
// a signature that does not check),
// WRONG_ROUND, ALREADY_DRAWN, ENDED (at or after end_at: the lottery ends
// undrawn, LOTTERY_ENDED), ENTRIES_OPEN (before entries_close_at),
// BEACON_NOT_DUE (before the round's publication time). The ranking is
// then computed off the actor (Frozen.RankDraw) and recorded by RecordDraw.
func (m *Machine) StartDraw(now int64, round uint64, randomness, signature []byte, out []Record) (Outcome, []Record) {
	switch {
	case !m.defined:
		return OutcomeNotFound, out
	case m.lot == nil:
		return OutcomeNotLottery, out
	case len(randomness) != lottery.Size:
		return OutcomeInvalid, out
	}
	l := m.lot
	if l.rules.Beacon.Accepts(round) != nil {
		return OutcomeWrongRound, out
	}
	if len(signature) > 0 && lottery.CheckSignature(l.rules.Beacon.Source, round, lottery.Hash(randomness), signature) != nil {
		return OutcomeInvalid, out
	}
	if l.drawStarted {
		return OutcomeAlreadyDrawn, out
	}
	at := m.decisionTime(now)
	if l.ended || at >= m.def.EndAt {
		return OutcomeEnded, m.endIfDue(at, out)
	}
	if at < l.rules.EntriesCloseAt {
		return OutcomeEntriesOpen, out
	}
	if t, _ := lottery.RoundTimeMs(l.rules.Beacon.Source, round); at < t {
		return OutcomeBeaconNotDue, out
	}
	out = m.closeEntriesIfDue(at, out)
	out = m.emit(&Record{Type: RecordDrawStarted, At: at, Lot: &LotteryFields{Round: round, Randomness: lottery.Hash(randomness),
		Signature: bytes.Clone(signature)}}, out)
	return OutcomeDrawStarted, out
}

// DrawPending reports whether a draw was started and not finished: its
// ranking must be computed (Frozen.RankDraw) and recorded (RecordDraw),
// also after a restart.
func (m *Machine) DrawPending() bool {
	return m.lot != nil && m.lot.drawStarted && !m.lot.drawDone
}

// DrawRanking is a draw's result as the rules compute it: the entry seqs of
// the winners and of the waitlist, in rank order, for the seed Seed.
type DrawRanking struct {
	Seed     lottery.Hash
	Winners  []uint32
	Waitlist []uint32
}

// RanksDraw reports whether rk is the ranking of the draw being recorded:
// a draw is pending and rk was computed for its seed. A ranking of
// another seed is stale: frozen from a draw whose DRAW_STARTED a recovery
// lost before it was durable, another draw started since.
func (m *Machine) RanksDraw(rk *DrawRanking) bool {
	return m.DrawPending() && rk.Seed == m.lot.seed
}

// RecordDraw records up to batch records of ranking (DrawBatch when batch
// is 0 or less, or above DrawBatch), resuming where
// the log stands: a WON reservation for each winner not yet recorded, in
// rank order, then the waitlist in chunks, then DRAW_DONE (and the
// promotions of waitlisted entrants to tokens already given back). It
// reports whether the draw is done. A ranking RanksDraw refuses (a stale
// one) records nothing.
func (m *Machine) RecordDraw(now int64, rk *DrawRanking, batch int, out []Record) ([]Record, bool) {
	l := m.lot
	if !m.RanksDraw(rk) {
		return out, !m.DrawPending()
	}
	if batch <= 0 || batch > DrawBatch {
		batch = DrawBatch
	}
	at := m.decisionTime(now)
	n := 0
	for int(l.drawWinners) < len(rk.Winners) && n < batch {
		token := m.pool.next()
		if token == 0 {
			break // a token bound elsewhere: the units run out here
		}
		entry := rk.Winners[l.drawWinners]
		out = m.emit(&Record{Type: RecordWon, At: at, Seq: m.table.count + 1, Token: token,
			ExpireAt: at + m.wonWindow(entry), Lot: &LotteryFields{EntrySeq: entry}}, out)
		n++
	}
	if int(l.drawWinners) < len(rk.Winners) && m.pool.next() != 0 {
		return out, false
	}
	for len(l.waitlist) < len(rk.Waitlist) && n < batch {
		chunk := rk.Waitlist[len(l.waitlist):min(len(rk.Waitlist), len(l.waitlist)+MaxWaitlistChunk)]
		out = m.emit(&Record{Type: RecordWaitlisted, At: at, Lot: &LotteryFields{Seqs: slices.Clone(chunk)}}, out)
		n++
	}
	if len(l.waitlist) < len(rk.Waitlist) {
		return out, false
	}
	winners, waitlist := l.drawLists()
	out = m.emit(&Record{Type: RecordDrawDone, At: at, Lot: &LotteryFields{Count: l.drawWinners,
		Root: lottery.ListRoot(winners), WaitlistRoot: lottery.ListRoot(waitlist)}}, out)
	return m.promoteWaitlist(at, out), true
}

// drawLists returns the recorded winners of the draw and the waitlist, as
// entry seqs in rank order.
func (l *lotteryState) drawLists() (winners, waitlist []uint32) {
	winners = make([]uint32, l.drawWinners)
	for i := range winners {
		winners[i] = l.won[i].entry
	}
	return winners, l.waitlist
}

// wonWindow is the payment window of the reservation entry seq wins: its
// pass's (payment_window_high_risk for risk >= 1, when set), as a
// reserve's with that pass.
func (m *Machine) wonWindow(seq uint32) int64 {
	return m.def.PaymentWindowFor(m.lot.passHolder(seq))
}

// promoteWaitlist gives each available token, once the draw is done and
// before end_at, to the next waitlisted entrant, with a fresh payment
// window (WON with FromWaitlist); at or after end_at it closes the
// waitlist instead. A waitlisted entrant never holds a live purchase on
// this SKU (only a WON makes one), so none is skipped.
func (m *Machine) promoteWaitlist(at int64, out []Record) []Record {
	l := m.lot
	out = m.endIfDue(at, out)
	for l.drawDone && !l.ended && int(l.waitNext) < len(l.waitlist) && m.pool.next() != 0 {
		entry := l.waitlist[l.waitNext]
		out = m.emit(&Record{Type: RecordWon, At: at, Seq: m.table.count + 1, Token: m.pool.next(),
			ExpireAt: at + m.wonWindow(entry), Lot: &LotteryFields{EntrySeq: entry, FromWaitlist: true}}, out)
	}
	return out
}

// RankDraw computes the ranking of the draw this frozen state started:
// every entry's rank key, the sort, the tier quotas and the waitlist
// (package lottery). It reads only the frozen copy, so the actor runs it on
// another goroutine: about 1.3 µs per entry for the keys, plus the sort.
// It returns false when the state holds no pending draw.
func (f *Frozen) RankDraw() (*DrawRanking, bool) {
	l := f.lot
	if l == nil || !l.drawStarted || l.drawDone {
		return nil, false
	}
	res := lottery.Draw(l.seed, l.pool(), l.rules.rules(f.def.SaleLimit))
	return &DrawRanking{Seed: l.seed, Winners: res.Winners, Waitlist: res.Waitlist}, true
}

// DrawLotterySecrets fills a lottery definition's server seed and
// pseudonym key for Define: drawn from rnd (crypto/rand in production)
// at the SKU's first definition, copied from m's definition after it, so
// a redefinition states the same lottery. d.Lottery is replaced by a copy;
// a definition without a lottery is left as it is.
func DrawLotterySecrets(d *Definition, m *Machine, rnd io.Reader) error {
	if d.Lottery == nil {
		return nil
	}
	rules := *d.Lottery
	switch {
	case m.Defined() && m.lot != nil:
		rules.ServerSeed, rules.PseudonymKey = m.lot.rules.ServerSeed, m.lot.rules.PseudonymKey
	case m.Defined(): // a plain SKU: Define refuses the change
	default:
		if _, err := io.ReadFull(rnd, rules.ServerSeed[:]); err != nil {
			return fmt.Errorf("drawing the lottery's server seed: %w", err)
		}
		if _, err := io.ReadFull(rnd, rules.PseudonymKey[:]); err != nil {
			return fmt.Errorf("drawing the lottery's pseudonym key: %w", err)
		}
	}
	d.Lottery = &rules
	return nil
}
