package sku

import (
	"github.com/seckill/seckill/lottery"
)

// lotteryState is a lottery SKU's state beside its reservations. Every list
// is append-only, so a frozen copy shares them by length; the maps are
// derived (rebuilt when a state is decoded).
type lotteryState struct {
	rules       LotteryRules
	committedAt int64 // ms, the time of LOTTERY_COMMITTED

	entries entryLog
	// byUser and byRequest map a user_id and a request_id to its entry_seq
	// (derived). Like the reservation table's, they hold a hash and a seq
	// per entry and compare keys in the entry log: ~16 bytes per entry
	// each, against ~45 for a Go map[string]uint32.
	byUser    index
	byRequest index
	// rooter hashes the pool lines as entries are recorded, so closing
	// costs O(1) (derived).
	rooter *lottery.Rooter
	// holders keeps the entry pass's holder of every entry whose pass
	// carried a risk level or subject keys (Holder.passSubjects), in
	// entry_seq order; the tier of every entry is in its row. subjects
	// counts the entries per subject key (derived), which
	// max_unpaid_per_subject caps: each entry may become an unpaid
	// reservation at the draw.
	holders  holderList
	subjects subjectCounts

	closed      bool
	closedAt    int64 // ms
	entriesRoot lottery.Hash

	drawStarted bool
	drawAt      int64 // ms
	round       uint64
	randomness  lottery.Hash
	signature   []byte       // the beacon's signature of round, when the draw was given one
	seed        lottery.Hash // derived from the draw inputs

	// won lists the reservations made for entries, in record order: the
	// draw's winners first (drawWinners of them), then promotions from
	// the waitlist.
	won         []wonEntry
	wonBy       map[uint32]uint32 // entry_seq -> reservation seq (derived)
	drawWinners uint32
	waitlist    []uint32          // entry seqs in rank order
	waitPos     map[uint32]uint32 // entry_seq -> 1 + index in waitlist (derived)
	waitNext    uint32            // waitlist[:waitNext] have been promoted
	drawDone    bool
	// ended is set by LOTTERY_ENDED (at endedAt, ms): the entries that
	// could still win then (every entry of a lottery not drawn, or the
	// entrants still waiting, waitlist[waitNext:]) lost.
	ended   bool
	endedAt int64
}

// wonEntry pairs an entry with the reservation it won.
type wonEntry struct {
	entry, reservation uint32
}

// entryRow is one entry: 16 bytes and no pointer; its ids are in the
// entry log's arena.
type entryRow struct {
	ids     uint64
	reqLen  uint8
	userLen uint8
	tier    uint8
}

// entryLog holds the entries in chunks that never move: a frozen state
// shares them by length.
type entryLog struct {
	ids    arena
	chunks [][]entryRow
	count  uint32
}

func (l *entryLog) add(requestID, userID string, tier uint8) uint32 {
	r := entryRow{ids: l.ids.add(requestID, userID), reqLen: uint8(len(requestID)), userLen: uint8(len(userID)), tier: tier}
	i := l.count
	if int(i>>chunkShift) == len(l.chunks) {
		l.chunks = append(l.chunks, make([]entryRow, 0, chunkSize))
	}
	c := &l.chunks[i>>chunkShift]
	*c = append(*c, r)
	l.count++
	return l.count
}

// get returns entry seq, or nil.
func (l *entryLog) get(seq uint32) *entryRow {
	if seq == 0 || seq > l.count {
		return nil
	}
	i := seq - 1
	return &l.chunks[i>>chunkShift][i&(chunkSize-1)]
}

func (l *entryLog) requestID(r *entryRow) string { return l.ids.str(r.ids, 0, int(r.reqLen)) }
func (l *entryLog) userID(r *entryRow) string    { return l.ids.str(r.ids, int(r.reqLen), int(r.userLen)) }

// key returns entry seq's request_id or user_id (for the lottery's indexes).
func (l *entryLog) key(seq uint32, f keyField) string {
	r := l.get(seq)
	if f == keyUserID {
		return l.userID(r)
	}
	return l.requestID(r)
}

func (l *entryLog) freeze() entryLog {
	return entryLog{ids: l.ids.freeze(), chunks: append([][]entryRow(nil), l.chunks...), count: l.count}
}

func newLotteryState(rules LotteryRules) *lotteryState {
	l := &lotteryState{
		rules:    rules,
		rooter:   lottery.NewRooter(),
		subjects: newSubjectCounts(),
		wonBy:    make(map[uint32]uint32),
		waitPos:  make(map[uint32]uint32),
	}
	l.byUser, l.byRequest = newIndex(&l.entries, keyUserID), newIndex(&l.entries, keyRequestID)
	return l
}

// addEntry records an entry by the holder of its entry pass (the zero
// Holder without one) and its pool line.
func (l *lotteryState) addEntry(requestID, userID string, h Holder) uint32 {
	seq := l.entries.add(requestID, userID, h.Tier)
	r := l.entries.get(seq)
	l.byUser.insert(l.entries.userID(r), seq)
	l.byRequest.insert(l.entries.requestID(r), seq)
	l.rooter.Add(lottery.Entry{Seq: seq, Pseudonym: lottery.Pseudonym(l.rules.PseudonymKey, userID), Tier: h.Tier})
	if h.passSubjects() {
		l.holders.add(seq, h)
		l.subjects.add(&h)
	}
	return seq
}

// addWon records that entry won reservation.
func (l *lotteryState) addWon(entry, reservation uint32) {
	l.won = append(l.won, wonEntry{entry, reservation})
	l.wonBy[entry] = reservation
}

// phase returns the phase at time at (ms).
func (l *lotteryState) phase(at int64) LotteryPhase {
	switch {
	case l.drawDone:
		return PhaseDrawn
	case l.drawStarted:
		return PhaseDrawing
	case l.ended:
		return PhaseEnded
	case l.closed || at >= l.rules.EntriesCloseAt:
		return PhaseClosed
	case at >= l.rules.EntriesOpenAt:
		return PhaseOpen
	}
	return PhaseCommitted
}

// mayStillWin counts the entries LOTTERY_ENDED would end: before a draw
// every entry, after it the entrants still waiting; 0 while a draw is
// being recorded (it ends first) and once ended.
func (l *lotteryState) mayStillWin() uint32 {
	switch {
	case l.ended:
		return 0
	case !l.drawStarted:
		return l.entries.count
	case l.drawDone:
		return uint32(len(l.waitlist)) - l.waitNext
	}
	return 0
}

// drawSeed returns the seed of the recorded draw inputs.
func (l *lotteryState) drawSeed(campaignID, skuID string) lottery.Hash {
	return lottery.Seed(campaignID, skuID, l.rules.ServerSeed, l.randomness[:], l.entriesRoot)
}

// pool returns the entries as the rules see them, in seq order.
func (l *lotteryState) pool() []lottery.Entry {
	out := make([]lottery.Entry, 0, l.entries.count)
	for seq := uint32(1); seq <= l.entries.count; seq++ {
		r := l.entries.get(seq)
		out = append(out, lottery.Entry{Seq: seq, Pseudonym: lottery.Pseudonym(l.rules.PseudonymKey, l.entries.userID(r)), Tier: r.tier})
	}
	return out
}

// freeze returns a read-only copy sharing the append-only lists.
func (l *lotteryState) freeze() *lotteryState {
	c := *l
	c.entries = l.entries.freeze()
	c.won = l.won[:len(l.won):len(l.won)]
	c.waitlist = l.waitlist[:len(l.waitlist):len(l.waitlist)]
	c.byUser, c.byRequest = index{}, index{} // derived: not read from a frozen copy
	c.holders = l.holders.freeze()
	c.wonBy, c.waitPos, c.rooter, c.subjects = nil, nil, nil, subjectCounts{}
	return &c
}

// addWaitlisted appends entry seqs to the waitlist.
func (l *lotteryState) addWaitlisted(seqs []uint32) {
	for _, s := range seqs {
		l.waitlist = append(l.waitlist, s)
		l.waitPos[s] = uint32(len(l.waitlist))
	}
}

// passHolder returns the holder of entry seq's pass when it carried a risk
// level or subject keys, the zero Holder otherwise: what the reservation
// the entry wins carries (so it counts among the unpaid per subject key and
// gets its pass's payment window), none for an entry of tier alone, as
// before entries kept more than their tier.
func (l *lotteryState) passHolder(seq uint32) Holder { return l.holders.get(seq) }

// freezeLottery returns a frozen copy of the lottery state, nil for a SKU
// sold first come, first served.
func (m *Machine) freezeLottery() *lotteryState {
	if m.lot == nil {
		return nil
	}
	return m.lot.freeze()
}

// auditLottery checks a lottery's invariants: every reservation is a won
// entry with the entry's ids, no entry won twice, the draw's winners fit the
// units, the waitlist holds no winner of the draw, and the indexes agree.
func (m *Machine) auditLottery(bad func(format string, args ...any)) {
	l := m.lot
	if l == nil {
		return
	}
	if int(m.table.count) != len(l.won) {
		bad("lottery: %d reservations for %d won entries", m.table.count, len(l.won))
	}
	if l.drawWinners > m.def.SaleLimit {
		bad("lottery: %d winners for sale_limit %d", l.drawWinners, m.def.SaleLimit)
	}
	seen := make(map[uint32]bool, len(l.won))
	for i, w := range l.won {
		e, r := l.entries.get(w.entry), m.table.get(w.reservation)
		switch {
		case e == nil || r == nil:
			bad("lottery: won entry %d names reservation %d that does not exist", w.entry, w.reservation)
			continue
		case seen[w.entry]:
			bad("lottery: entry %d won twice", w.entry)
		case w.reservation != uint32(i+1):
			bad("lottery: won entry %d holds reservation %d, want %d", w.entry, w.reservation, i+1)
		case m.table.userID(w.reservation) != l.entries.userID(e) || m.table.requestID(w.reservation) != l.entries.requestID(e):
			bad("lottery: reservation %d is not entry %d's", w.reservation, w.entry)
		}
		if want, got := l.passHolder(w.entry), m.holders.get(w.reservation); got != want {
			bad("lottery: reservation %d holds %+v, entry %d's pass %+v", w.reservation, got, w.entry, want)
		}
		seen[w.entry] = true
		if pos, ok := l.waitPos[w.entry]; ok && (i < int(l.drawWinners) || pos > l.waitNext) {
			bad("lottery: entry %d is both a winner and waitlisted", w.entry)
		}
	}
	if l.byUser.len() != int(l.entries.count) || l.byRequest.len() != int(l.entries.count) {
		bad("lottery: indexes hold %d users and %d request_ids for %d entries", l.byUser.len(), l.byRequest.len(), l.entries.count)
	}
	recount := newSubjectCounts()
	for i := range l.holders.rows {
		row := &l.holders.rows[i]
		if e := l.entries.get(row.seq); e == nil || row.h.Tier != e.tier || !row.h.passSubjects() || i > 0 && row.seq <= l.holders.rows[i-1].seq {
			bad("lottery: the holder of entry %d is out of order, empty or not the entry's tier", row.seq)
		}
		recount.add(&row.h)
	}
	if diff, ok := l.subjects.equal(&recount); !ok {
		bad("lottery: entries per subject key: %s", diff)
	}
	if l.closed && l.rooter.Root() != l.entriesRoot {
		bad("lottery: entries_root does not match the entries")
	}
	if l.ended && l.drawStarted && !l.drawDone {
		bad("lottery: ended while a draw was being recorded")
	}
}
