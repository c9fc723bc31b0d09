package sku

import (
	"bytes"
	"encoding/binary"

	"github.com/seckill/seckill/lottery"
)

// The lottery section of an encoded state (state_codec.go): an optional
// trailing section, present only for a lottery SKU, after the refunds and
// the passes section (tag 1), if any.
//
//	u8 2 (the section's tag) | rules (the layout of LOTTERY_COMMITTED) | varint committed_at
//	uvarint n, n × (str request_id, str user_id, u8 tier)     entries in seq order
//	bool closed, varint closed_at, hash entries_root
//	bool draw_started, varint draw_at, uvarint round, hash randomness
//	uvarint n, n × (uvarint entry_seq, uvarint reservation)   won, in record order
//	uvarint draw_winners
//	uvarint n, n × uvarint entry_seq                           waitlist in rank order
//	uvarint wait_next, bool draw_done
//
// The indexes, the running pool hash and the seed are derived, and rebuilt
// by the decoder, which checks the section against the reservations. The
// entries' passes beyond their tier are in a section of their own (tag 7,
// lotteryEntryPassesTag).
const lotterySectionTag = 2

// lotterySignatureTag tags the state's section of a lottery draw's beacon
// signature: u8 4 | str signature. Written after the lottery section (and
// after the cell section, which a lottery SKU never has) only when the
// draw recorded a signature, so a state without one is what older
// versions wrote.
const lotterySignatureTag = 4

// lotteryEndedTag tags the state's section of an ended lottery:
// u8 6 | varint ended_at. Written after the beacon signature section, if
// any, only once LOTTERY_ENDED is recorded, so a state without it is what
// older versions wrote.
const lotteryEndedTag = 6

// encodeEnded appends the ended lottery's section, if any.
func (e *stateEncoder) encodeEnded(f *Frozen) {
	if f.lot == nil || !f.lot.ended {
		return
	}
	e.b = binary.AppendVarint(append(e.b, lotteryEndedTag), f.lot.endedAt)
}

// decodeEnded reads the ended lottery's section when the next byte is its
// tag. It checks what the state alone shows (no draw being recorded, an
// entry or a waitlisted entrant left to lose); not end_at, which a
// redefinition may have moved later since.
func (s *stateDecoder) decodeEnded() {
	if s.err != nil || len(s.b) == 0 || s.b[0] != lotteryEndedTag {
		return
	}
	s.byte() // the tag
	at := s.varint()
	l := s.m.lot
	switch {
	case s.err != nil:
		return
	case l == nil || l.mayStillWin() == 0:
		s.fail("an ended lottery without entries that could have won, or with a draw being recorded")
		return
	}
	l.ended, l.endedAt = true, at
}

// lotteryEntryPassesTag tags the state's section of the entries whose pass
// carried a risk level or subject keys:
//
//	u8 7 | uvarint n, n × (uvarint entry_seq - previous entry_seq,
//	                       u8 risk, u8 subject flags, 8 bytes per set flag)
//
// in entry_seq order (the tier is the entry's, in the lottery section).
// Written after the lottery ended section, if any, only when an entry has
// one, so a state without it is what older versions wrote, its entries
// holding their tier alone.
const lotteryEntryPassesTag = 7

// minEntryPassSize is the smallest encoded row of the section: a one-byte
// seq delta, risk and flags.
const minEntryPassSize = 3

// encodeEntryPasses appends the entry passes section, if any.
func (e *stateEncoder) encodeEntryPasses(f *Frozen) {
	if f.lot == nil || len(f.lot.holders.rows) == 0 {
		return
	}
	rows := f.lot.holders.rows
	e.b = binary.AppendUvarint(append(e.b, lotteryEntryPassesTag), uint64(len(rows)))
	var prev uint32
	for i := range rows {
		e.b = binary.AppendUvarint(e.b, uint64(rows[i].seq-prev))
		e.b = appendPassSubjects(e.b, &rows[i].h)
		prev = rows[i].seq
		e.maybeFlush()
	}
}

// decodeEntryPasses reads the entry passes section when the next byte is
// its tag, rebuilding the entries per subject key, then checks every won
// entry's reservation against it: a winner whose pass carried a risk level
// or subject keys holds that pass's holder (the passes section, tag 1,
// gave it and checked its payment window), any other winner none.
func (s *stateDecoder) decodeEntryPasses() {
	l := s.m.lot
	if s.err == nil && len(s.b) != 0 && s.b[0] == lotteryEntryPassesTag {
		s.byte() // the tag
		if l == nil {
			s.fail("entry passes on a SKU that is not a lottery")
			return
		}
		n := s.count("entry pass", minEntryPassSize)
		if s.err == nil && n == 0 {
			s.fail("an entry passes section of no entry") // never written: not canonical
			return
		}
		var seq uint32
		for i := uint32(0); i < n && s.err == nil; i++ {
			delta := s.uint32()
			if s.err != nil {
				return
			}
			if delta == 0 || uint64(seq)+uint64(delta) > uint64(l.entries.count) {
				s.fail("entry pass %d: entry %d+%d out of order or unknown", i+1, seq, delta)
				return
			}
			seq += delta
			h := s.passSubjects(l.entries.get(seq).tier)
			if s.err == nil && !h.passSubjects() {
				s.fail("entry pass %d: no risk and no subject key", i+1)
			}
			if s.err != nil {
				return
			}
			l.holders.add(seq, h)
			l.subjects.add(&h)
		}
	}
	if s.err != nil || l == nil {
		return
	}
	for _, w := range l.won {
		if s.m.holders.get(w.reservation) != l.passHolder(w.entry) {
			s.fail("reservation %d: its holder is not entry %d's pass", w.reservation, w.entry)
			return
		}
	}
}

// encodeBeaconSignature appends the beacon signature section, if any.
func (e *stateEncoder) encodeBeaconSignature(f *Frozen) {
	if f.lot == nil || len(f.lot.signature) == 0 {
		return
	}
	e.b = append(e.b, lotterySignatureTag)
	e.b = appendString(e.b, string(f.lot.signature))
}

// decodeBeaconSignature reads the beacon signature section when the next
// byte is its tag, and checks it as DRAW_STARTED's apply does.
func (s *stateDecoder) decodeBeaconSignature() {
	if s.err != nil || len(s.b) == 0 || s.b[0] != lotterySignatureTag {
		return
	}
	s.byte() // the tag
	sig := bytes.Clone(s.bytes())
	l := s.m.lot
	switch {
	case s.err != nil:
		return
	case l == nil || !l.drawStarted:
		s.fail("a beacon signature without a draw")
	default:
		if err := lottery.CheckSignature(l.rules.Beacon.Source, l.round, l.randomness, sig); err != nil {
			s.fail("beacon signature: %v", err)
			return
		}
		l.signature = sig
	}
}

// minEntrySize is the smallest encoded entry, to bound counts.
const minEntrySize = 5

// encodeLottery appends f's lottery section, if any.
func (e *stateEncoder) encodeLottery(f *Frozen) {
	l := f.lot
	if l == nil {
		return
	}
	e.b = append(e.b, lotterySectionTag)
	e.b = appendRules(e.b, &l.rules)
	e.b = binary.AppendVarint(e.b, l.committedAt)
	e.b = binary.AppendUvarint(e.b, uint64(l.entries.count))
	for seq := uint32(1); seq <= l.entries.count; seq++ {
		r := l.entries.get(seq)
		e.b = appendString(e.b, l.entries.requestID(r))
		e.b = appendString(e.b, l.entries.userID(r))
		e.b = append(e.b, r.tier)
		e.maybeFlush()
	}
	b := appendBool(e.b, l.closed)
	b = binary.AppendVarint(b, l.closedAt)
	b = append(b, l.entriesRoot[:]...)
	b = appendBool(b, l.drawStarted)
	b = binary.AppendVarint(b, l.drawAt)
	b = binary.AppendUvarint(b, l.round)
	b = append(b, l.randomness[:]...)
	e.b = binary.AppendUvarint(b, uint64(len(l.won)))
	for _, w := range l.won {
		e.b = binary.AppendUvarint(binary.AppendUvarint(e.b, uint64(w.entry)), uint64(w.reservation))
		e.maybeFlush()
	}
	e.b = binary.AppendUvarint(e.b, uint64(l.drawWinners))
	e.b = binary.AppendUvarint(e.b, uint64(len(l.waitlist)))
	for _, s := range l.waitlist {
		e.b = binary.AppendUvarint(e.b, uint64(s))
		e.maybeFlush()
	}
	e.b = binary.AppendUvarint(e.b, uint64(l.waitNext))
	e.b = appendBool(e.b, l.drawDone)
}

// decodeLottery reads the lottery section when the next byte is its tag, checking
// it against the reservations decoded before it.
func (s *stateDecoder) decodeLottery() {
	if s.err != nil || len(s.b) == 0 || s.b[0] != lotterySectionTag {
		return
	}
	m := s.m
	s.byte() // the tag
	rules := s.rules()
	committedAt := s.varint()
	if s.err != nil {
		return
	}
	if err := rules.validate(m.def.SaleLimit); err != nil {
		s.fail("lottery rules: %v", err)
		return
	}
	l := newLotteryState(*rules)
	l.committedAt = committedAt
	m.lot = l
	m.def.Lottery = &l.rules
	m.definitionChanged()
	n := s.count("entry", minEntrySize)
	for i := uint32(0); i < n && s.err == nil; i++ {
		req, user := s.stringPair()
		tier := s.byte()
		if s.err != nil {
			return
		}
		_, dupUser := l.byUser.get(user)
		_, dupReq := l.byRequest.get(req)
		if !ValidID(req) || !ValidID(user) || dupUser || dupReq {
			s.fail("entry %d: invalid or repeated ids", i+1)
			return
		}
		l.addEntry(req, user, Holder{Tier: tier}) // the entry passes section (tag 7) adds the rest
	}
	l.closed, l.closedAt, l.entriesRoot = s.bool(), s.varint(), s.hash()
	l.drawStarted, l.drawAt, l.round, l.randomness = s.bool(), s.varint(), s.uvarint(), s.hash()
	if s.err != nil {
		return
	}
	if l.closed && l.entriesRoot != l.rooter.Root() {
		s.fail("entries_root does not match the entries")
		return
	}
	if l.drawStarted {
		if !l.closed || l.rules.Beacon.Accepts(l.round) != nil {
			s.fail("a draw on open entries or of a wrong round")
			return
		}
		l.seed = l.drawSeed(m.def.CampaignID, m.def.SKUID)
	}
	n = s.count("won entry", 2)
	for i := uint32(0); i < n && s.err == nil; i++ {
		entry, res := s.uint32(), s.uint32()
		if s.err != nil {
			return
		}
		e, r := l.entries.get(entry), m.table.get(res)
		_, dup := l.wonBy[entry]
		if e == nil || r == nil || dup || m.table.requestID(res) != l.entries.requestID(e) || m.table.userID(res) != l.entries.userID(e) {
			s.fail("won entry %d: reservation %d does not match", entry, res)
			return
		}
		l.addWon(entry, res)
	}
	l.drawWinners = s.uint32()
	n = s.count("waitlisted entry", 1)
	seqs := make([]uint32, 0, n)
	for i := uint32(0); i < n && s.err == nil; i++ {
		seqs = append(seqs, s.uint32())
	}
	l.addWaitlisted(seqs)
	l.waitNext = s.uint32()
	l.drawDone = s.bool()
	if s.err != nil {
		return
	}
	switch {
	case int(l.drawWinners) > len(l.won) || int(l.waitNext) > len(l.waitlist) || len(l.won) != int(l.drawWinners)+int(l.waitNext):
		s.fail("won %d, draw winners %d, promoted %d do not add up", len(l.won), l.drawWinners, l.waitNext)
	case len(l.waitPos) != len(l.waitlist) || uint64(len(l.waitlist)) > uint64(l.rules.Waitlist):
		s.fail("the waitlist repeats an entry or is too long")
	case int(m.table.count) != len(l.won):
		s.fail("%d reservations for %d won entries", m.table.count, len(l.won))
	case l.drawDone && !l.drawStarted:
		s.fail("a draw done that never started")
	}
}
