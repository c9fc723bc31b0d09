package purchase

import "github.com/seckill/seckill/actors/sku"

// EventKind is what an Event reports.
type EventKind uint8

// Event kinds.
const (
	// EventReserved: a reservation made (RESERVED, or WON for an entry).
	EventReserved EventKind = iota + 1
	// EventClosed: a reservation closed (cancel, expiry, an operator's).
	EventClosed
	// EventEntered: a lottery entry recorded (ENTERED).
	EventEntered
	// EventEntryEnded: a lottery entry lost (DRAW_DONE for the entries
	// neither won nor waitlisted, WAITLIST_CLOSED for those still waiting).
	EventEntryEnded
)

// Event is a hold made or ended by a SKU of a campaign-scope campaign, in
// its log order: what the registry learns once it is durable. ID is the
// reservation id (EventReserved, EventClosed) or the entry's request_id
// (EventEntered, EventEntryEnded).
type Event struct {
	Kind   EventKind
	UserID string
	ID     string
}

// Events returns the events of records m decided and applied (nil unless
// m's campaign has purchase_limit "campaign"). It reads the reservations
// and entries from m, so it runs where m is owned, right after the
// decision.
func Events(m *sku.Machine, records []sku.Record) []Event {
	if m.Definition().PurchaseLimit != sku.PurchaseLimitCampaign {
		return nil
	}
	var out []Event
	for i := range records {
		r := &records[i]
		switch r.Type {
		case sku.RecordReserved, sku.RecordWon, sku.RecordClosed:
			if v, ok := m.Get(r.Seq); ok {
				kind := EventReserved
				if r.Type == sku.RecordClosed {
					kind = EventClosed
				}
				out = append(out, Event{Kind: kind, UserID: v.UserID, ID: v.ReservationID})
			}
		case sku.RecordEntered:
			out = append(out, Event{Kind: EventEntered, UserID: r.UserID, ID: r.RequestID})
		case sku.RecordDrawDone, sku.RecordWaitlistClosed:
			m.EntriesLostBy(r.Type, func(userID, requestID string) {
				out = append(out, Event{Kind: EventEntryEnded, UserID: userID, ID: requestID})
			})
		}
	}
	return out
}

// Apply hands durable events of SKU skuID to the registry in order. It
// returns the waiters to wake and the users whose new hold conflicts with
// a claim on another SKU (Reserved, Entered).
func (r *Registry[W]) Apply(skuID string, events []Event) (wake []W, conflicts []string) {
	for _, ev := range events {
		var w []W
		var conflict bool
		switch ev.Kind {
		case EventReserved:
			w, conflict = r.Reserved(ev.UserID, skuID, ev.ID)
		case EventEntered:
			w, conflict = r.Entered(ev.UserID, skuID, ev.ID)
		case EventClosed:
			w = r.Closed(ev.UserID, skuID, ev.ID)
		case EventEntryEnded:
			w = r.EntryEnded(ev.UserID, skuID, ev.ID)
		}
		wake = append(wake, w...)
		if conflict {
			conflicts = append(conflicts, ev.UserID)
		}
	}
	return wake, conflicts
}
