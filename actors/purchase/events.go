package purchase

import "github.com/seckill/seckill/actors/sku"

// Event is a reservation made or closed by a SKU of a campaign-scope
// campaign, in its log order: what the registry learns once it is durable.
type Event struct {
	Closed        bool // a close (cancel, expiry, an operator's); else a RESERVED
	UserID        string
	ReservationID string
}

// Events returns the events of records m decided and applied (nil unless
// m's campaign has purchase_limit "campaign"). It reads the reservations
// from m, so it runs where m is owned, right after the decision.
func Events(m *sku.Machine, records []sku.Record) []Event {
	if m.Definition().PurchaseLimit != sku.PurchaseLimitCampaign {
		return nil
	}
	var out []Event
	for i := range records {
		r := &records[i]
		if r.Type != sku.RecordReserved && r.Type != sku.RecordClosed {
			continue
		}
		if v, ok := m.Get(r.Seq); ok {
			out = append(out, Event{Closed: r.Type == sku.RecordClosed, UserID: v.UserID, ReservationID: v.ReservationID})
		}
	}
	return out
}

// Apply hands durable events of SKU skuID to the registry (Reserved,
// Closed) in order. It returns the waiters to wake and the users whose
// reservation conflicts with a claim on another SKU (Reserved).
func (r *Registry[W]) Apply(skuID string, events []Event) (wake []W, conflicts []string) {
	for _, ev := range events {
		if ev.Closed {
			wake = append(wake, r.Closed(ev.UserID, skuID, ev.ReservationID)...)
			continue
		}
		w, conflict := r.Reserved(ev.UserID, skuID, ev.ReservationID)
		wake = append(wake, w...)
		if conflict {
			conflicts = append(conflicts, ev.UserID)
		}
	}
	return wake, conflicts
}
