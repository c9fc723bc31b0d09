package sim

import (
	"slices"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/lottery"
)

// The model of a lottery SKU (docs/lottery.md), beside the model of
// its reservations: entries, one per user, during the window; the close at
// entries_close_at (by an entry, a tick or the draw); a draw at or after the
// beacon round's time; the winners' reservations in rank order; the
// waitlist; a token given back after the draw goes to the next waitlisted
// entrant. The ranking is the rules' (package lottery, checked against a
// reference in another language); what the model decides itself is when
// each record is due and what every answer is.

// modelEntry is one entry, with what its entry pass said.
type modelEntry struct {
	request, user string
	tier, risk    uint8
	subjects      []modelSubject
	won           uint32 // the reservation it won, 0: none
}

// modelLottery is a lottery's state in the model.
type modelLottery struct {
	rules     sku.LotteryRules
	entries   []modelEntry // entry_seq-1
	byUser    map[string]uint32
	byRequest map[string]uint32
	closed    bool
	started   bool
	done      bool
	// seed is the draw's seed and ranking its result, computed when the
	// draw starts; recorded counts its winners recorded so far.
	seed     lottery.Hash
	ranking  lottery.Result
	recorded int
	waitlist []uint32 // recorded
	waitNext int
	// ended: end_at passed, with no draw being recorded, while entries
	// could still win (all of them before a draw, the waitlisted after
	// it), who
	// lost (LOTTERY_ENDED).
	ended bool
}

func (l *modelLottery) clone() *modelLottery {
	if l == nil {
		return nil
	}
	c := *l
	c.entries = slices.Clone(l.entries)
	c.byUser = cloneMap(l.byUser)
	c.byRequest = cloneMap(l.byRequest)
	c.waitlist = slices.Clone(l.waitlist)
	return &c
}

func cloneMap(m map[string]uint32) map[string]uint32 {
	c := make(map[string]uint32, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// defineLottery is the LOTTERY_COMMITTED effect of a first definition.
func (m *model) defineLottery(at int64, rules sku.LotteryRules) {
	m.effect(at, func() {
		m.lot = &modelLottery{rules: rules, byUser: map[string]uint32{}, byRequest: map[string]uint32{}}
	})
}

// closeEntries records the close once entries_close_at has passed.
func (m *model) closeEntries(at int64) {
	if l := m.lot; l != nil && !l.closed && at >= l.rules.EntriesCloseAt {
		m.effect(at, func() { l.closed = true })
	}
}

// entryReply is a predicted answer to an entry.
type entryReply struct {
	outcome   sku.Outcome
	seq       uint32
	duplicate bool
}

// entryCapped is the documented cap of a lottery (docs/lottery.md): one of
// the subjects already has max_unpaid_per_subject entries (0: no cap),
// since every entry may win an unpaid reservation.
func (l *modelLottery) entryCapped(limit uint32, subjects []modelSubject) bool {
	if limit == 0 {
		return false
	}
	for _, s := range subjects {
		n := uint32(0)
		for i := range l.entries {
			if slices.Contains(l.entries[i].subjects, s) {
				n++
			}
		}
		if n >= limit {
			return true
		}
	}
	return false
}

// enter is an entry by user, with the holder of its entry pass (zero:
// none).
func (m *model) enter(now int64, request, user string, holder sku.Holder) entryReply {
	switch {
	case !m.defined:
		return entryReply{outcome: sku.OutcomeNotFound}
	case m.lot == nil:
		return entryReply{outcome: sku.OutcomeNotLottery}
	case !validID(request) || !validID(user):
		return entryReply{outcome: sku.OutcomeInvalid}
	}
	l := m.lot
	if seq, ok := l.byRequest[request]; ok {
		if l.entries[seq-1].user != user {
			return entryReply{outcome: sku.OutcomeRequestIDReused}
		}
		return entryReply{outcome: sku.OutcomeEntered, seq: seq, duplicate: true}
	}
	if seq, ok := l.byUser[user]; ok {
		return entryReply{outcome: sku.OutcomeEntered, seq: seq, duplicate: true}
	}
	at := m.at(now)
	if at < l.rules.EntriesOpenAt {
		return entryReply{outcome: sku.OutcomeEntriesNotOpen}
	}
	m.closeEntries(at)
	switch {
	case l.closed || l.ended:
		return entryReply{outcome: sku.OutcomeEntriesClosed}
	case m.paused:
		return entryReply{outcome: sku.OutcomePaused}
	}
	subjects := subjectsOf(holder)
	if l.entryCapped(m.def.MaxUnpaidPerSubject, subjects) {
		return entryReply{outcome: sku.OutcomeSubjectLimit} // not recorded
	}
	seq := uint32(len(l.entries)) + 1
	m.effect(at, func() {
		l.entries = append(l.entries, modelEntry{request: request, user: user, tier: holder.Tier, risk: holder.Risk, subjects: subjects})
		l.byUser[user], l.byRequest[request] = seq, seq
	})
	return entryReply{outcome: sku.OutcomeEntered, seq: seq}
}

// draw is the admin's draw: the inputs recorded, or a refusal (a
// signature given must be the beacon's for the round, and the randomness
// its SHA-256).
func (m *model) draw(now int64, round uint64, randomness, signature []byte) sku.Outcome {
	switch {
	case !m.defined:
		return sku.OutcomeNotFound
	case m.lot == nil:
		return sku.OutcomeNotLottery
	case len(randomness) != lottery.Size:
		return sku.OutcomeInvalid
	}
	l := m.lot
	b := l.rules.Beacon
	if round != b.Round && round != b.Round+lottery.FallbackRounds {
		return sku.OutcomeWrongRound
	}
	if len(signature) > 0 && lottery.CheckSignature(b.Source, round, lottery.Hash(randomness), signature) != nil {
		return sku.OutcomeInvalid
	}
	if l.started {
		return sku.OutcomeAlreadyDrawn
	}
	at := m.at(now)
	if l.ended || at >= m.def.EndAt {
		m.endLottery(at)
		return sku.OutcomeEnded
	}
	if at < l.rules.EntriesCloseAt {
		return sku.OutcomeEntriesOpen
	}
	if t, _ := lottery.RoundTimeMs(b.Source, round); at < t {
		return sku.OutcomeBeaconNotDue
	}
	m.closeEntries(at)
	m.effect(at, func() {
		l.started = true
		var pool []lottery.Entry
		for i, e := range l.entries {
			pool = append(pool, lottery.Entry{Seq: uint32(i + 1), Pseudonym: lottery.Pseudonym(l.rules.PseudonymKey, e.user), Tier: e.tier})
		}
		l.seed = lottery.Seed(m.def.CampaignID, m.def.SKUID, l.rules.ServerSeed, randomness, lottery.EntriesRoot(pool))
		l.ranking = lottery.Draw(l.seed, pool, lottery.Rules{Units: m.def.SaleLimit, Waitlist: l.rules.Waitlist, Tiers: l.rules.Tiers})
	})
	return sku.OutcomeDrawStarted
}

// drawSeed is the seed of the draw started (zero: none): the draw a
// ranking handed out now is of.
func (m *model) drawSeed() lottery.Hash {
	if l := m.lot; l != nil && l.started {
		return l.seed
	}
	return lottery.Hash{}
}

// ranks reports whether a ranking of the draw of seed is the ranking of
// the draw being recorded. One of another draw is stale: its draw was
// lost by a recovery, and another started since; it records nothing (the
// engine ranks the pending draw again).
func (m *model) ranks(seed lottery.Hash) bool {
	l := m.lot
	return l != nil && l.started && !l.done && l.seed == seed
}

// recordDraw is one round of recording the ranking, at most batch records
// (the engine's DrawBatch): the winners not yet recorded, in rank order,
// while tokens are available; then the waitlist (one chunk: waitlists
// here are shorter than sku.MaxWaitlistChunk); then DRAW_DONE and the
// promotions to tokens already given back, which the batch does not
// bound. It reports whether the draw is recorded.
func (m *model) recordDraw(now int64, batch int) (done bool) {
	l := m.lot
	if l == nil || !l.started || l.done {
		return true
	}
	at := m.at(now)
	n := 0
	for l.recorded < len(l.ranking.Winners) && m.available() > 0 && n < batch {
		e := l.ranking.Winners[l.recorded]
		m.win(at, e, func() { l.recorded++ })
		n++
	}
	if l.recorded < len(l.ranking.Winners) && m.available() > 0 {
		return false
	}
	if len(l.waitlist) < len(l.ranking.Waitlist) && n < batch { // unless recorded before a crash
		m.effect(at, func() { l.waitlist = slices.Clone(l.ranking.Waitlist) })
	}
	if len(l.waitlist) < len(l.ranking.Waitlist) {
		return false
	}
	m.effect(at, func() { l.done = true })
	m.promote(at)
	return true
}

// win makes the reservation an entry won, with a fresh payment window:
// its pass's, as a reserve's with that pass.
func (m *model) win(at int64, entry uint32, then func()) {
	l := m.lot
	e := &l.entries[entry-1]
	seq := uint32(len(m.res)) + 1
	m.effect(at, func() {
		token := m.fresh + 1
		if len(m.released) > 0 {
			token, m.released = m.released[0], m.released[1:]
		} else {
			m.fresh++
		}
		m.res = append(m.res, modelReservation{request: e.request, user: e.user, token: token, subjects: e.subjects,
			state: mPending, expireAt: at + m.window(e.risk), holds: true})
		m.requests[e.request] = modelRequest{user: e.user, seq: seq}
		m.live[e.user] = seq
		e.won = seq
		then()
	})
}

// promote gives each token available after the draw and before end_at to
// the next waitlisted entrant; at or after end_at the lottery ends.
func (m *model) promote(at int64) {
	l := m.lot
	if l == nil || !l.done {
		return
	}
	m.endLottery(at)
	for !l.ended && l.waitNext < len(l.waitlist) && m.available() > 0 {
		m.win(at, l.waitlist[l.waitNext], func() { l.waitNext++ })
	}
}

// endLottery records the lottery's end once end_at has passed, when no
// draw is being recorded and entries could still win: every entry before
// a draw (the entries closed first), the entrants still waiting after it.
func (m *model) endLottery(at int64) {
	l := m.lot
	if l == nil || l.ended || at < m.def.EndAt || l.started && !l.done {
		return
	}
	if !l.started && len(l.entries) > 0 {
		m.closeEntries(at)
	} else if !l.done || l.waitNext >= len(l.waitlist) {
		return
	}
	m.effect(at, func() { l.ended = true })
}

// entryStatus is the answer an entry's status gives.
func (l *modelLottery) entryStatus(seq uint32) (sku.EntryStatus, uint32) {
	e := l.entries[seq-1]
	switch {
	case e.won != 0:
		return sku.EntryWon, 0
	case l.ended:
		return sku.EntryLost, 0
	case !l.done:
		return sku.EntryEntered, 0
	}
	if i := slices.Index(l.waitlist, seq); i >= 0 {
		return sku.EntryWaitlisted, uint32(i - l.waitNext + 1)
	}
	return sku.EntryLost, 0
}
