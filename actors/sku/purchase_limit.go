package sku

import (
	"errors"
	"fmt"
)

// PurchaseLimit is the scope of a campaign's one-purchase-per-user rule
// (the campaign's purchase_limit): over which SKUs a user may hold at most one live purchase
// (PENDING_PAYMENT or PAID). It is part of every SKU's definition, the same
// for every SKU of the campaign, and never changes once defined.
type PurchaseLimit uint8

// Purchase limits. The numbers are written in DEFINE records and states:
// frozen.
const (
	// PurchaseLimitSKU: one live purchase per (campaign, SKU, user); a
	// user may buy one unit of each SKU of the campaign. The default.
	PurchaseLimitSKU PurchaseLimit = 0
	// PurchaseLimitCampaign: one live purchase per (campaign, user), over
	// all the campaign's SKUs: what a UNIQUE(campaign_id, user_id)
	// constraint on an orders table would enforce.
	// Each SKU still decides its own reserves; the engine's purchase
	// registry (package actors/purchase) admits a user's reserve to one SKU
	// at a time.
	PurchaseLimitCampaign PurchaseLimit = 1
)

// String returns the JSON spelling: "sku" or "campaign".
func (p PurchaseLimit) String() string {
	switch p {
	case PurchaseLimitSKU:
		return "sku"
	case PurchaseLimitCampaign:
		return "campaign"
	}
	return fmt.Sprintf("PurchaseLimit(%d)", uint8(p))
}

// ParsePurchaseLimit reads the JSON spelling; "" is the default, "sku".
func ParsePurchaseLimit(s string) (PurchaseLimit, bool) {
	switch s {
	case "", "sku":
		return PurchaseLimitSKU, true
	case "campaign":
		return PurchaseLimitCampaign, true
	}
	return 0, false
}

// CheckCampaignPurchaseLimit is the rule that a campaign has one
// purchase_limit, the same for all its SKUs and never changed: next, a
// definition about to be decided (or published, or applied from a
// campaign document), may stand beside defined, the current definition of
// a SKU (next's own included), only when defined is of another campaign,
// not defined (CampaignID ""), or has next's purchase_limit. Every place
// that defines SKUs asks it: the engine before a
// Define, the HTTP API before it applies anything of a campaign PUT or
// file, a cells publish, and CheckRedefine for the SKU itself.
func CheckCampaignPurchaseLimit(defined, next *Definition) error {
	if defined.CampaignID != next.CampaignID || defined.PurchaseLimit == next.PurchaseLimit {
		return nil
	}
	return fmt.Errorf("%w: purchase_limit %q, but SKU %s of campaign %s has %q (the scope is the campaign's: one for all its SKUs, and it never changes)",
		ErrInvalidDefinition, next.PurchaseLimit, defined.SKUID, defined.CampaignID, defined.PurchaseLimit)
}

// checkPurchaseLimit is Validate's part for the purchase limit: a known
// value. A celled SKU may have campaign scope: the router and the cell's
// guard then route a user by (campaign, user) over one cell map shared by
// the campaign's SKUs (cells.Slot, cells.CheckCampaign), so one cell's
// purchase registry sees every purchase of the user. A lottery SKU may
// too: its entries claim their users in the registry (actors/purchase),
// and a lottery is never celled, so its campaign stays on one process.
func (d *Definition) checkPurchaseLimit() error {
	if d.PurchaseLimit > PurchaseLimitCampaign {
		return fmt.Errorf("%w: purchase_limit must be \"sku\" or \"campaign\"", ErrInvalidDefinition)
	}
	return nil
}

// The purchase group of DEFINE (record.go) and the state's purchase
// section (tag 5), written only for PurchaseLimitCampaign: a u8, the limit.
const stateSectionPurchase = 5

// errPurchaseGroup refuses a purchase group that says "sku": it is never
// written (canonical encodings only).
var errPurchaseGroup = errors.New(`a purchase group must say "campaign"`)

// purchaseLimit reads a purchase group's byte.
func (d *decoder) purchaseLimit(def *Definition) {
	p := PurchaseLimit(d.byte())
	if d.err == nil && p != PurchaseLimitCampaign {
		d.fail(errPurchaseGroup)
	}
	def.PurchaseLimit = p
}

// encodePurchase appends f's purchase section, if the SKU's campaign has
// campaign scope.
func (e *stateEncoder) encodePurchase(f *Frozen) {
	if f.def.PurchaseLimit == PurchaseLimitSKU {
		return
	}
	e.b = append(e.b, stateSectionPurchase, byte(f.def.PurchaseLimit))
}

// lastSection decodes the state's purchase section, if present, and
// refuses any byte after it: the purchase section is the last, after the
// cell section (tag 3) of a celled SKU or the sections of one that is not.
func (s *stateDecoder) lastSection() {
	if s.err == nil && len(s.b) != 0 && s.b[0] == stateSectionPurchase {
		s.purchaseSection()
	}
	if s.err == nil && len(s.b) != 0 {
		s.fail("%d trailing bytes: section tag %d unknown or out of order", len(s.b), s.b[0])
	}
}

// purchaseSection decodes the state's purchase section.
func (s *stateDecoder) purchaseSection() {
	m := s.m
	if tag := s.byte(); s.err == nil && tag != stateSectionPurchase {
		s.fail("unknown trailing section %d", tag)
		return
	}
	p := PurchaseLimit(s.byte())
	if s.err != nil {
		return
	}
	if !m.defined || p != PurchaseLimitCampaign {
		s.fail("purchase section: limit %d on a SKU defined %v", p, m.defined)
		return
	}
	d := m.def
	d.PurchaseLimit = p
	if err := d.Validate(); err != nil {
		s.fail("purchase section: %v", err)
		return
	}
	m.setDefinition(d)
}

// LivePurchases returns the live reservations (PENDING_PAYMENT or PAID) by
// user: reservation id. The engine rebuilds a campaign's purchase registry
// from it (actors/purchase.Registry.Resync); a SKU holds at most one per
// user (its own rule), so the map loses nothing.
func (m *Machine) LivePurchases() map[string]string {
	return livePurchases(&m.table, &m.def, m.idTags)
}

// LivePurchases is Machine.LivePurchases as of the freeze (the campaign
// audit's, off the actor).
func (f *Frozen) LivePurchases() map[string]string {
	if !f.defined {
		return map[string]string{}
	}
	return livePurchases(&f.table, &f.def, newIDTagger(f.def.IDKey))
}

func livePurchases(t *table, d *Definition, tags *idTagger) map[string]string {
	live := make(map[string]string)
	for seq := uint32(1); seq <= t.count; seq++ {
		r := t.get(seq)
		if r.state == StatePendingPayment || r.state == StatePaid {
			live[t.userID(seq)] = tags.format(d.CampaignID, d.SKUID, d.Cell, seq)
		}
	}
	return live
}

// EntriesClosedAt reports whether a lottery's entries are closed at nowMs
// by its rules: an entry decided then makes nothing (a SKU decides at
// max(now, its last record's time), never earlier), so in a campaign-scope
// campaign it goes to the SKU without claiming its user and answers
// ENTRIES_CLOSED (or the entry a repeat made) whatever the user holds
// elsewhere. False for a SKU that is not a lottery.
func (d Definition) EntriesClosedAt(nowMs int64) bool {
	return d.Lottery != nil && nowMs >= d.Lottery.EntriesCloseAt
}

// LiveEntries returns the lottery entries that may still win, by user:
// the entry's request_id. On a lottery SKU of a campaign-scope campaign
// such an entry holds its user's claim in the campaign's purchase registry
// (actors/purchase), which the engine rebuilds from it beside
// LivePurchases. An entry may still win until the draw is done (unless it
// won already), and while it waits on the waitlist before the waitlist
// closes. Empty for a SKU that is not a lottery.
func (m *Machine) LiveEntries() map[string]string { return m.lot.liveEntries() }

// LiveEntries is Machine.LiveEntries as of the freeze (the campaign
// audit's, off the actor).
func (f *Frozen) LiveEntries() map[string]string { return f.lot.liveEntries() }

// liveEntries reads only the append-only lists (won, waitlist), so a
// frozen copy answers too.
func (l *lotteryState) liveEntries() map[string]string {
	out := make(map[string]string)
	if l == nil {
		return out
	}
	add := func(seq uint32) {
		r := l.entries.get(seq)
		out[l.entries.userID(r)] = l.entries.requestID(r)
	}
	if l.ended {
		return out
	}
	if l.drawDone {
		for _, seq := range l.waitlist[l.waitNext:] {
			add(seq)
		}
		return out
	}
	won := make(map[uint32]bool, len(l.won))
	for _, w := range l.won {
		won[w.entry] = true
	}
	for seq := uint32(1); seq <= l.entries.count; seq++ {
		if !won[seq] {
			add(seq)
		}
	}
	return out
}

// EntriesLostBy calls fn with the user and request_id of each entry that a
// record of type t, just applied, made LOST: DRAW_DONE the entries neither
// won nor waitlisted, LOTTERY_ENDED those that could still win (every
// entry of a lottery never drawn, else those still waiting). Other types
// call nothing. The campaign's purchase registry then lets these users buy
// again (actors/purchase.Events).
func (m *Machine) EntriesLostBy(t RecordType, fn func(userID, requestID string)) {
	l := m.lot
	if l == nil {
		return
	}
	lost := func(seq uint32) {
		r := l.entries.get(seq)
		fn(l.entries.userID(r), l.entries.requestID(r))
	}
	switch t {
	case RecordDrawDone:
		for seq := uint32(1); seq <= l.entries.count; seq++ {
			_, won := l.wonBy[seq]
			_, waiting := l.waitPos[seq]
			if !won && (!waiting || mutantReleaseWaitlisted) {
				lost(seq)
			}
		}
	case RecordLotteryEnded:
		if !l.drawStarted {
			for seq := uint32(1); seq <= l.entries.count; seq++ {
				lost(seq)
			}
			return
		}
		for _, seq := range l.waitlist[l.waitNext:] {
			lost(seq)
		}
	}
}

// KnownEntry is the answer to an entry of a request_id that made entry
// found before, by userID: the entry again (Duplicate set), or
// REQUEST_ID_REUSED when another user made it. The entry's counterpart of
// KnownRequest, for an entry of a campaign-scope campaign whose user's
// claim is held on another SKU.
func KnownEntry(found EntryView, userID string) EntryResult {
	if found.UserID != userID {
		return EntryResult{Outcome: OutcomeRequestIDReused}
	}
	return EntryResult{Outcome: OutcomeEntered, Duplicate: true, Entry: found}
}

// KnownRequest is the answer to a reserve of a request_id the SKU decided
// already, by userID, given what Lookup found: the original result again
// (Duplicate set; a rejection without its user), or REQUEST_ID_REUSED when
// another user decided it. The one rule of "one request_id, one result":
// ReserveWith answers it, and so does the engine for a reserve of a
// campaign-scope campaign whose user holds a purchase on another SKU.
func KnownRequest(found Result, userID string) Result {
	if found.Reservation.UserID != userID {
		return Result{Outcome: OutcomeRequestIDReused}
	}
	if found.Outcome != OutcomeAccepted {
		return Result{Outcome: found.Outcome, Duplicate: true}
	}
	found.Duplicate = true
	return found
}
