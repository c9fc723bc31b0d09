package sim

import (
	"errors"
	"fmt"
	"slices"

	"github.com/seckill/seckill/actors/shell"
	"github.com/seckill/seckill/actors/sku"
)

// checkDrawRanked checks, after a round of a live SKU, that a pending
// draw goes on: the core knows its ranking (the model's account) or a
// rank job is out. A draw waiting for a ranking nobody computes would
// never be recorded.
func (r *run) checkDrawRanked() error {
	if r.sh.Failed() != nil || !r.sh.Core().Machine().DrawPending() || r.rankKnown || r.exec.holds(shell.JobRank) {
		return nil
	}
	return errors.New("a draw is pending, but no ranking is known or being computed")
}

// checkLottery compares a lottery's rules, entries and answers with the
// model: every entry's status, position and reservation, and whether a
// draw is pending.
func checkLottery(m *model, e *sku.Machine) error {
	lr := e.Definition().Lottery
	if (lr != nil) != (m.lot != nil) {
		return fmt.Errorf("lottery %v, model %v", lr != nil, m.lot != nil)
	}
	if lr == nil {
		return nil
	}
	l := m.lot
	if lr.EntriesOpenAt != l.rules.EntriesOpenAt || lr.EntriesCloseAt != l.rules.EntriesCloseAt || lr.Beacon != l.rules.Beacon ||
		lr.Waitlist != l.rules.Waitlist || !slices.Equal(lr.Tiers, l.rules.Tiers) {
		return fmt.Errorf("lottery rules %+v, model %+v", *lr, l.rules)
	}
	if e.DrawPending() != (l.started && !l.done) {
		return fmt.Errorf("draw pending %v, model started %v done %v", e.DrawPending(), l.started, l.done)
	}
	for i, me := range l.entries {
		seq := uint32(i + 1)
		v, ok := e.EntryByRequest(me.request)
		if !ok {
			return fmt.Errorf("entry %d (%s): the engine has none", seq, me.request)
		}
		status, position := l.entryStatus(seq)
		switch {
		case v.EntrySeq != seq || v.UserID != me.user || v.Tier != me.tier:
			return fmt.Errorf("entry %s: seq %d user %s tier %d, model %d %s %d", me.request, v.EntrySeq, v.UserID, v.Tier, seq, me.user, me.tier)
		case v.Status != status || v.Position != position:
			return fmt.Errorf("entry %d: %s position %d, model %s %d", seq, v.Status, v.Position, status, position)
		}
		if status == sku.EntryWon {
			if _, _, res, _, err := sku.ParseReservationID(v.Reservation.ReservationID); err != nil || res != me.won {
				return fmt.Errorf("entry %d won %s, model reservation %d", seq, v.Reservation.ReservationID, me.won)
			}
		}
	}
	return nil
}
