package sku

import (
	"errors"
	"fmt"
)

// PurchaseLimit is the scope of a campaign's one-purchase-per-user rule
// (issue #19): over which SKUs a user may hold at most one live purchase
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
	// all the campaign's SKUs (seed §1's UNIQUE(campaign_id, user_id)).
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

// checkPurchaseLimit is Validate's part for the purchase limit: a known
// value, and no campaign scope on a lottery or a celled SKU.
func (d *Definition) checkPurchaseLimit() error {
	switch {
	case d.PurchaseLimit > PurchaseLimitCampaign:
		return fmt.Errorf("%w: purchase_limit must be \"sku\" or \"campaign\"", ErrInvalidDefinition)
	case d.PurchaseLimit == PurchaseLimitSKU:
		return nil
	case d.Lottery != nil:
		// A winner's reservation is made by the draw, not by a reserve the
		// purchase registry could admit: two draws could both pick a user.
		return fmt.Errorf("%w: a lottery SKU cannot have purchase_limit \"campaign\" (its draw reserves for winners without asking the campaign's other SKUs)", ErrInvalidDefinition)
	case d.Cell != "":
		return fmt.Errorf("%w: a celled SKU cannot have purchase_limit \"campaign\" (the purchase registry holds one process's SKUs)", ErrInvalidDefinition)
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
			live[t.userID(r)] = tags.format(d.CampaignID, d.SKUID, d.Cell, seq)
		}
	}
	return live
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
