package sku

import (
	"github.com/seckill/seckill/lottery"
)

// applyLottery applies a lottery record, checking what the deciding
// command checked (ErrDoesNotApply otherwise, the Machine unchanged).
func (m *Machine) applyLottery(r *Record) error {
	if r.Type == RecordLotteryCommitted {
		return m.applyCommitted(r)
	}
	l := m.lot
	if l == nil {
		return notApply(r, "the SKU is not a lottery")
	}
	if r.Lot == nil {
		return notApply(r, "no lottery fields")
	}
	switch r.Type {
	case RecordEntered:
		return m.applyEntered(r)
	case RecordEntriesClosed:
		switch {
		case l.closed:
			return notApply(r, "entries closed already")
		case r.At < l.rules.EntriesCloseAt:
			return notApply(r, "closed at %d before entries_close_at %d", r.At, l.rules.EntriesCloseAt)
		case r.Lot.Count != l.entries.count || r.Lot.Root != l.rooter.Root():
			return notApply(r, "count %d and root do not match the %d entries recorded", r.Lot.Count, l.entries.count)
		}
		l.closed, l.closedAt, l.entriesRoot = true, r.At, r.Lot.Root
	case RecordDrawStarted:
		t, err := lottery.RoundTimeMs(l.rules.Beacon.Source, r.Lot.Round)
		switch {
		case l.drawStarted:
			return notApply(r, "a draw was started before")
		case !l.closed:
			return notApply(r, "entries are not closed")
		case l.rules.Beacon.Accepts(r.Lot.Round) != nil || err != nil:
			return notApply(r, "round %d is neither round %d nor its fallback", r.Lot.Round, l.rules.Beacon.Round)
		case r.At < t:
			return notApply(r, "drawn at %d before round %d's time %d", r.At, r.Lot.Round, t)
		}
		if len(r.Lot.Signature) > 0 {
			if err := lottery.CheckSignature(l.rules.Beacon.Source, r.Lot.Round, r.Lot.Randomness, r.Lot.Signature); err != nil {
				return notApply(r, "%v", err)
			}
		}
		l.drawStarted, l.drawAt, l.round, l.randomness = true, r.At, r.Lot.Round, r.Lot.Randomness
		l.signature = r.Lot.Signature
		l.seed = l.drawSeed(m.def.CampaignID, m.def.SKUID)
	case RecordWon:
		return m.applyWon(r)
	case RecordWaitlisted:
		return m.applyWaitlisted(r)
	case RecordDrawDone:
		winners, waitlist := l.drawLists()
		switch {
		case !l.drawStarted || l.drawDone:
			return notApply(r, "no draw in progress")
		case r.Lot.Count != l.drawWinners || r.Lot.Root != lottery.ListRoot(winners) || r.Lot.WaitlistRoot != lottery.ListRoot(waitlist):
			return notApply(r, "winners %d and roots do not match the %d winners recorded", r.Lot.Count, l.drawWinners)
		}
		l.drawDone = true
	case RecordLotteryEnded:
		switch lost := l.mayStillWin(); {
		case r.At < m.def.EndAt:
			return notApply(r, "ended at %d before end_at %d", r.At, m.def.EndAt)
		case lost == 0 || r.Lot.Count != lost:
			return notApply(r, "count %d, but %d entries may still win", r.Lot.Count, lost)
		}
		l.ended, l.endedAt = true, r.At
	}
	return nil
}

func (m *Machine) applyCommitted(r *Record) error {
	lr := r.Def.Lottery
	switch {
	case lr == nil:
		return notApply(r, "no rules")
	case m.lot != nil:
		return notApply(r, "the lottery is committed already")
	case m.table.count != 0 || m.rejections.count != 0:
		return notApply(r, "the SKU has reservations")
	case r.At >= lr.EntriesCloseAt:
		return notApply(r, "committed at %d, not before entries_close_at %d", r.At, lr.EntriesCloseAt)
	case lr.ServerSeed == lottery.Hash{} || lr.PseudonymKey == lottery.Hash{}:
		return notApply(r, "zero server seed or pseudonym key")
	}
	if err := lr.validate(m.def.SaleLimit); err != nil {
		return notApply(r, "%v", err)
	}
	m.lot = newLotteryState(*lr)
	m.lot.committedAt = r.At
	m.def.Lottery = &m.lot.rules
	m.definitionChanged()
	return nil
}

func (m *Machine) applyEntered(r *Record) error {
	l := m.lot
	switch {
	case l.closed || r.At >= l.rules.EntriesCloseAt:
		return notApply(r, "entries are closed")
	case r.At < l.rules.EntriesOpenAt:
		return notApply(r, "entries are not open")
	case m.paused:
		return notApply(r, "the SKU is paused")
	case r.Seq != l.entries.count+1 || r.Seq > MaxEntries:
		return notApply(r, "entry_seq %d, want %d", r.Seq, l.entries.count+1)
	case !ValidID(r.RequestID) || !ValidID(r.UserID):
		return notApply(r, "invalid request or user id")
	case r.Holder.Validate() != nil:
		return notApply(r, "%v", r.Holder.Validate())
	case m.overEntryCap(&r.Holder):
		return notApply(r, "a subject key has max_unpaid_per_subject %d entries", m.def.MaxUnpaidPerSubject)
	}
	if _, ok := l.byUser.get(r.UserID); ok {
		return notApply(r, "user %q entered already", r.UserID)
	}
	if _, ok := l.byRequest.get(r.RequestID); ok {
		return notApply(r, "request_id %q entered already", r.RequestID)
	}
	l.addEntry(r.RequestID, r.UserID, r.Holder)
	return nil
}

func (m *Machine) applyWon(r *Record) error {
	l := m.lot
	e := l.entries.get(r.Lot.EntrySeq)
	switch {
	case e == nil:
		return notApply(r, "no entry %d", r.Lot.EntrySeq)
	case r.Lot.FromWaitlist && !l.drawDone:
		return notApply(r, "a promotion before the draw is done")
	case l.ended:
		return notApply(r, "a reservation after the lottery ended")
	case r.Lot.FromWaitlist && (int(l.waitNext) >= len(l.waitlist) || l.waitlist[l.waitNext] != r.Lot.EntrySeq):
		return notApply(r, "entry %d is not next on the waitlist", r.Lot.EntrySeq)
	case !r.Lot.FromWaitlist && (!l.drawStarted || l.drawDone || len(l.waitlist) > 0):
		return notApply(r, "a winner outside the draw")
	case r.Seq != m.table.count+1 || r.Seq > MaxReservations:
		return notApply(r, "seq %d, want %d", r.Seq, m.table.count+1)
	case r.Token == 0 || r.Token != m.pool.next():
		return notApply(r, "token %d, want %d", r.Token, m.pool.next())
	case r.ExpireAt != r.At+m.wonWindow(r.Lot.EntrySeq):
		return notApply(r, "expire_at %d does not follow the payment window of entry %d's pass", r.ExpireAt, r.Lot.EntrySeq)
	}
	if _, ok := l.wonBy[r.Lot.EntrySeq]; ok {
		return notApply(r, "entry %d won before", r.Lot.EntrySeq)
	}
	requestID, userID := l.entries.requestID(e), l.entries.userID(e)
	if _, ok := m.live.get(userID); ok {
		return notApply(r, "user %q already has a live purchase", userID)
	}
	if _, ok := m.byRequest.get(requestID); ok {
		return notApply(r, "request_id %q already decided", requestID)
	}
	h := l.passHolder(r.Lot.EntrySeq)
	row := reservation{token: r.Token, state: StatePendingPayment, flags: flagHoldsToken}
	if m.shortWindow(&h) {
		row.flags |= flagShortWindow
	}
	seq := m.table.add(row, requestID, userID, r.At)
	m.pool.take(r.Token, seq)
	m.byRequest.insert(requestID, seq)
	m.live.insert(userID, seq)
	m.states[StatePendingPayment]++
	if !h.empty() { // the entry's pass, as a reserve's (applyReserved)
		m.holders.add(seq, h)
		m.countUnpaid(&h)
		if m.shortWindow(&h) {
			m.queueHighRisk(seq)
		}
	}
	l.addWon(r.Lot.EntrySeq, seq)
	if r.Lot.FromWaitlist {
		l.waitNext++
	} else {
		l.drawWinners++
	}
	return nil
}

func (m *Machine) applyWaitlisted(r *Record) error {
	l := m.lot
	switch {
	case !l.drawStarted || l.drawDone:
		return notApply(r, "no draw in progress")
	case len(r.Lot.Seqs) == 0 || len(r.Lot.Seqs) > MaxWaitlistChunk:
		return notApply(r, "%d seqs in a chunk", len(r.Lot.Seqs))
	case uint64(len(l.waitlist))+uint64(len(r.Lot.Seqs)) > uint64(l.rules.Waitlist):
		return notApply(r, "the waitlist would exceed %d", l.rules.Waitlist)
	}
	seen := make(map[uint32]bool, len(r.Lot.Seqs))
	for _, s := range r.Lot.Seqs {
		_, won := l.wonBy[s]
		_, listed := l.waitPos[s]
		if won || listed || seen[s] || l.entries.get(s) == nil {
			return notApply(r, "entry %d cannot be waitlisted", s)
		}
		seen[s] = true
	}
	l.addWaitlisted(r.Lot.Seqs)
	return nil
}
