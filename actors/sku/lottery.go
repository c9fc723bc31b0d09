package sku

import (
	"fmt"

	"github.com/seckill/seckill/internal/timefmt"
	"github.com/seckill/seckill/lottery"
)

// A lottery SKU (Definition.Lottery set) sells by draw rather than first
// come, first served: users enter during a window, the window closes, and a
// draw anyone can recompute (package lottery holds the rules) picks the
// winners, who get reservations in rank order, and a waitlist, whose
// entrants get the tokens winners' reservations give back. The records:
//
//	LOTTERY_COMMITTED  right after the first DEFINE: the rules, the server
//	                   seed (its SHA-256 is the published commit; the seed
//	                   itself is shown only after the draw) and the
//	                   pseudonym key
//	ENTERED            one per user: entry_seq, request_id, user_id, tier,
//	                   and the entry pass's risk and subject keys if any
//	ENTRIES_CLOSED     the entry count and entries_root, at or after
//	                   entries_close_at (a tick, an entry or the draw makes it)
//	DRAW_STARTED       the beacon round and its randomness: the seed follows
//	WON                a reservation for an entry: a winner of the draw, in
//	                   rank order, or the next waitlisted entrant taking a
//	                   token a winner gave back (FromWaitlist)
//	WAITLISTED         a chunk of the waitlist, in rank order
//	DRAW_DONE          the number of winners and the roots of the winner and
//	                   waitlist lists
//	LOTTERY_ENDED      at or after end_at, while entries could still win
//	                   and no draw is being recorded: the sale is over, no
//	                   draw or promotion follows, those entries lose (all
//	                   of a lottery never drawn, else the entrants waiting)
//
// The ranking itself is never recorded and never recomputed on replay: the
// SKU actor ranks a frozen copy off the actor (Frozen.RankDraw) and the core
// records the result; replay applies the records.

// LotteryRules is the lottery part of a definition. Times are Unix ms.
type LotteryRules struct {
	EntriesOpenAt  int64 // ms; an entry before it answers ENTRIES_NOT_OPEN
	EntriesCloseAt int64 // ms; an entry at or after it answers ENTRIES_CLOSED
	Beacon         lottery.Beacon
	// Waitlist is how many non-winners, in rank order, wait for a token a
	// winner gives back.
	Waitlist uint32
	// Tiers are the quotas in declared order (empty: every entry in one
	// tier 0 with quota "rest"). At most lottery.MaxTiers.
	Tiers []lottery.Quota
	// ServerSeed and PseudonymKey are drawn at random by the engine at the
	// first definition (like IDKey) and recorded with LOTTERY_COMMITTED;
	// zero in a redefinition means "keep them".
	ServerSeed   lottery.Hash
	PseudonymKey lottery.Hash
}

// MaxEntries bounds the entries of one lottery SKU (entry_seq is a uint32).
const MaxEntries = MaxReservations

// validate checks r for a SKU with saleLimit units.
func (r *LotteryRules) validate(saleLimit uint32) error {
	closeTime, err := r.Beacon.TimeMs()
	switch {
	case err != nil:
		return fmt.Errorf("%w: beacon: %v", ErrInvalidDefinition, err)
	case r.EntriesCloseAt <= r.EntriesOpenAt:
		return fmt.Errorf("%w: entries_close_at must be after entries_open_at", ErrInvalidDefinition)
	case closeTime <= r.EntriesCloseAt:
		return fmt.Errorf("%w: beacon round %d is published at %s, not after entries_close_at %s", ErrInvalidDefinition, r.Beacon.Round, timefmt.Millis(closeTime), timefmt.Millis(r.EntriesCloseAt))
	}
	if err := r.rules(saleLimit).Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidDefinition, err)
	}
	return nil
}

// rules returns the allocation rules of the draw.
func (r *LotteryRules) rules(saleLimit uint32) lottery.Rules {
	return lottery.Rules{Units: saleLimit, Waitlist: r.Waitlist, Tiers: r.Tiers}
}

// sameRules reports whether a and b state the same lottery, secrets aside
// when b's are zero ("keep them").
func sameRules(a, b *LotteryRules) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.EntriesOpenAt != b.EntriesOpenAt || a.EntriesCloseAt != b.EntriesCloseAt || a.Beacon != b.Beacon ||
		a.Waitlist != b.Waitlist || len(a.Tiers) != len(b.Tiers) {
		return false
	}
	for i := range a.Tiers {
		if a.Tiers[i] != b.Tiers[i] {
			return false
		}
	}
	keep := b.ServerSeed == lottery.Hash{} && b.PseudonymKey == lottery.Hash{}
	return keep || a.ServerSeed == b.ServerSeed && a.PseudonymKey == b.PseudonymKey
}

// checkLotteryRedefine is CheckRedefine's lottery rule: a plain SKU stays
// plain, a lottery keeps its rules and its sale_limit (the units the
// commitment promised).
func (d Definition) checkLotteryRedefine(next Definition) error {
	switch {
	case d.Lottery != nil && next.SaleLimit != d.SaleLimit:
		return fmt.Errorf("%w: a lottery's sale_limit may not change", ErrInvalidDefinition)
	case next.Lottery == nil:
		return nil // a DEFINE record, or a redefinition that keeps the lottery
	case d.Lottery == nil:
		return fmt.Errorf("%w: a SKU sold first come, first served cannot become a lottery", ErrInvalidDefinition)
	case !sameRules(d.Lottery, next.Lottery):
		return fmt.Errorf("%w: the lottery rules may not change once committed", ErrInvalidDefinition)
	}
	return nil
}

// LotteryPhase is where a lottery SKU stands.
type LotteryPhase uint8

// Lottery phases, in order.
const (
	PhaseNone      LotteryPhase = iota // not a lottery
	PhaseCommitted                     // rules and commit recorded; before entries_open_at
	PhaseOpen                          // taking entries
	PhaseClosed                        // ENTRIES_CLOSED recorded, or entries_close_at passed
	PhaseDrawing                       // DRAW_STARTED recorded, winners being recorded
	PhaseDrawn                         // DRAW_DONE recorded
	PhaseEnded                         // LOTTERY_ENDED recorded before a draw: never drawn, every entry lost
)

var phaseNames = [...]string{"NONE", "COMMITTED", "OPEN", "CLOSED", "DRAWING", "DRAWN", "ENDED"}

func (p LotteryPhase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return fmt.Sprintf("LotteryPhase(%d)", uint8(p))
}

// EntryStatus is an entry's answer.
type EntryStatus uint8

// Entry statuses.
const (
	EntryEntered    EntryStatus = 1 // recorded; the draw has not decided it yet
	EntryWon        EntryStatus = 2 // it holds (or held) a reservation
	EntryWaitlisted EntryStatus = 3 // waiting for a token a winner gives back, until end_at
	EntryLost       EntryStatus = 4 // neither won nor waitlisted, or left waiting at end_at
)

var entryStatusNames = [...]string{"", "ENTERED", "WON", "WAITLISTED", "LOST"}

func (s EntryStatus) String() string {
	if int(s) < len(entryStatusNames) && s != 0 {
		return entryStatusNames[s]
	}
	return fmt.Sprintf("EntryStatus(%d)", uint8(s))
}

// EntryView is a copy of one entry and its answer.
type EntryView struct {
	EntrySeq  uint32
	RequestID string
	UserID    string
	Tier      uint8
	Pseudonym lottery.Hash
	Status    EntryStatus
	// Position is the 1-based place among the entrants still waiting
	// (WAITLISTED only).
	Position uint32
	// Reservation is the reservation won (WON only).
	Reservation View
}

// EntryResult is the answer to Enter.
type EntryResult struct {
	Outcome   Outcome // ENTERED, or why not
	Duplicate bool    // the request_id or the user had entered before: the original entry
	Entry     EntryView
	// With purchase_limit "campaign", not recorded: ALREADY_PURCHASED names
	// the user's live purchase on another SKU (Purchase.ReservationID),
	// ALREADY_ENTERED the user's entry on another lottery SKU (Entered).
	Purchase View
	Entered  EntryRef
}

// sameDefinition reports whether next states the definition d holds
// (a lottery's secrets zero in next mean "keep them").
func (d Definition) sameDefinition(next Definition) bool {
	a, b := d, next
	a.Lottery, b.Lottery = nil, nil
	return a == b && sameRules(d.Lottery, next.Lottery)
}
