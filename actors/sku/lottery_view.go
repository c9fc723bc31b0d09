package sku

import (
	"io"

	"github.com/seckill/seckill/lottery"
)

// entryView returns a copy of entry seq with its answer.
func (m *Machine) entryView(seq uint32) EntryView {
	l := m.lot
	r := l.entries.get(seq)
	userID := l.entries.userID(r)
	v := EntryView{EntrySeq: seq, RequestID: l.entries.requestID(r), UserID: userID, Tier: r.tier,
		Pseudonym: lottery.Pseudonym(l.rules.PseudonymKey, userID), Status: EntryEntered}
	if res, ok := l.wonBy[seq]; ok {
		v.Status, v.Reservation = EntryWon, m.view(res, m.table.get(res))
		return v
	}
	if !l.drawDone {
		return v
	}
	if pos, ok := l.waitPos[seq]; ok && !l.waitClosed {
		v.Status, v.Position = EntryWaitlisted, pos-l.waitNext
		return v
	}
	v.Status = EntryLost
	return v
}

// EntryByRequest returns the entry a request_id made; false when there is
// none (or the SKU is not a lottery).
func (m *Machine) EntryByRequest(requestID string) (EntryView, bool) {
	if m.lot == nil {
		return EntryView{}, false
	}
	seq, ok := m.lot.byRequest.get(requestID)
	if !ok {
		return EntryView{}, false
	}
	return m.entryView(seq), true
}

// LotteryInfo is what a lottery publishes: the rules and the commitment
// from the start, the pool's count and root from the close, and the draw's
// inputs and result roots once drawn. Hashes are raw; the HTTP API shows
// them as lowercase hex.
type LotteryInfo struct {
	CampaignID, SKUID string
	SaleLimit         uint32
	Rules             LotteryRules // ServerSeed and PseudonymKey zeroed: never published here
	Phase             LotteryPhase
	Commit            lottery.Hash
	CommittedAt       int64 // ms, when the rules and the commit were recorded
	EntryCount        uint32
	Closed            bool
	ClosedAt          int64 // ms
	EntriesRoot       lottery.Hash
	// Set once the draw started.
	Drawn      bool
	DrawAt     int64 // ms
	Round      uint64
	Randomness lottery.Hash
	Signature  []byte // the beacon's signature of Round, when the draw was given one
	Winners    uint32 // of the draw: those recorded so far while DRAWING, all once done
	// Set once the draw is done: the server seed is revealed.
	Done         bool
	ServerSeed   lottery.Hash
	Seed         lottery.Hash
	WinnersRoot  lottery.Hash
	Waitlisted   uint32
	WaitlistRoot lottery.Hash
	Promoted     uint32 // waitlisted entrants who got a token so far
	// Set once WAITLIST_CLOSED is recorded (at or after end_at): the
	// entrants still waiting then lost.
	WaitlistClosed   bool
	WaitlistClosedAt int64 // ms
}

// LotteryInfo returns the public lottery information at the freeze, at
// time now (ms, for the phase); false when the SKU is not a lottery.
func (f *Frozen) LotteryInfo(now int64) (LotteryInfo, bool) {
	l := f.lot
	if l == nil {
		return LotteryInfo{}, false
	}
	info := LotteryInfo{CampaignID: f.def.CampaignID, SKUID: f.def.SKUID, SaleLimit: f.def.SaleLimit,
		Rules: l.rules, Phase: l.phase(max(now, f.lastAt)), Commit: lottery.Commit(l.rules.ServerSeed), CommittedAt: l.committedAt,
		EntryCount: l.entries.count, Closed: l.closed, ClosedAt: l.closedAt, EntriesRoot: l.entriesRoot}
	info.Rules.ServerSeed, info.Rules.PseudonymKey = lottery.Hash{}, lottery.Hash{}
	if l.drawStarted {
		info.Drawn, info.DrawAt, info.Round, info.Randomness = true, l.drawAt, l.round, l.randomness
		info.Winners, info.Signature = l.drawWinners, l.signature
	}
	if l.drawDone {
		winners, waitlist := l.drawLists()
		info.Done, info.ServerSeed, info.Seed = true, l.rules.ServerSeed, l.seed
		info.WinnersRoot = lottery.ListRoot(winners)
		info.Waitlisted, info.WaitlistRoot = uint32(len(waitlist)), lottery.ListRoot(waitlist)
		info.Promoted = l.waitNext
		info.WaitlistClosed, info.WaitlistClosedAt = l.waitClosed, l.waitClosedAt
	}
	return info, true
}

// WritePool writes the canonical pool (the bytes entries_root hashes once
// the entries are closed) to w: one line per entry in seq order. It reads
// only the frozen copy (one HMAC per entry), so it runs off the actor.
func (f *Frozen) WritePool(w io.Writer) (int64, error) {
	l := f.lot
	if l == nil {
		return 0, nil
	}
	buf := make([]byte, 0, 64<<10)
	var n int64
	for seq := uint32(1); seq <= l.entries.count; seq++ {
		r := l.entries.get(seq)
		buf = lottery.AppendLine(buf, lottery.Entry{Seq: seq, Pseudonym: lottery.Pseudonym(l.rules.PseudonymKey, l.entries.userID(r)), Tier: r.tier})
		if len(buf) >= 60<<10 || seq == l.entries.count {
			k, err := w.Write(buf)
			n += int64(k)
			if err != nil {
				return n, err
			}
			buf = buf[:0]
		}
	}
	return n, nil
}

// Lottery reports whether the frozen SKU is a lottery.
func (f *Frozen) Lottery() bool { return f.lot != nil }
