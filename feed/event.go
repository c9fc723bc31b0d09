package feed

import (
	"encoding/hex"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/timefmt"
)

// Event types of the feed (CloudEvents "type"). Every sku.RecordType maps
// to one (EventType); a record type without one fails the feed's tests.
const (
	eventSKUDefined            = "seckill.sku.defined"
	eventSKUPaused             = "seckill.sku.paused"
	eventSKUResumed            = "seckill.sku.resumed"
	eventReservationCreated    = "seckill.reservation.created"
	eventReservationPaid       = "seckill.reservation.paid"
	eventReservationClosed     = "seckill.reservation.closed"
	eventReservationReleased   = "seckill.reservation.released"
	eventPaymentRefundRequired = "seckill.payment.refund_required"
	// The lottery's events (a lottery SKU's entries and draw). A winner's
	// reservation (WON) is a seckill.reservation.created like any other.
	eventLotteryCommitted     = "seckill.lottery.committed"
	eventLotteryEntered       = "seckill.lottery.entered"
	eventLotteryEntriesClosed = "seckill.lottery.entries_closed"
	eventLotteryDrawStarted   = "seckill.lottery.draw_started"
	eventLotteryWaitlisted    = "seckill.lottery.waitlisted"
	eventLotteryDrawDone      = "seckill.lottery.draw_done"
	eventLotteryEnded         = "seckill.lottery.ended"
	// A celled SKU's quota (Beyond one node): a grant of token ranges from
	// the etcd ledger made sellable, unsold tokens handed back before the
	// ledger credits them, the cell's epoch raised at start.
	eventCellGranted  = "seckill.cell.granted"
	eventCellReturned = "seckill.cell.returned"
	eventCellEpoch    = "seckill.cell.epoch"
	// eventRequestRejected is a durable SOLD_OUT: most records of a busy
	// sale, sent only when a consumer names it in types=.
	eventRequestRejected = "seckill.request.rejected"
)

// EventType returns the feed's event type of a record type, "" for a type
// it does not know. The switch lists every sku.RecordType.
func EventType(t sku.RecordType) string {
	switch t {
	case sku.RecordDefine:
		return eventSKUDefined
	case sku.RecordReserved:
		return eventReservationCreated
	case sku.RecordRejected:
		return eventRequestRejected
	case sku.RecordPaid:
		return eventReservationPaid
	case sku.RecordClosed:
		return eventReservationClosed
	case sku.RecordRefundRequired:
		return eventPaymentRefundRequired
	case sku.RecordReleased:
		return eventReservationReleased
	case sku.RecordPaused:
		return eventSKUPaused
	case sku.RecordResumed:
		return eventSKUResumed
	case sku.RecordLotteryCommitted:
		return eventLotteryCommitted
	case sku.RecordEntered:
		return eventLotteryEntered
	case sku.RecordEntriesClosed:
		return eventLotteryEntriesClosed
	case sku.RecordDrawStarted:
		return eventLotteryDrawStarted
	case sku.RecordWon:
		return eventReservationCreated
	case sku.RecordWaitlisted:
		return eventLotteryWaitlisted
	case sku.RecordDrawDone:
		return eventLotteryDrawDone
	case sku.RecordLotteryEnded:
		return eventLotteryEnded
	case sku.RecordGrant:
		return eventCellGranted
	case sku.RecordReturn:
		return eventCellReturned
	case sku.RecordEpoch:
		return eventCellEpoch
	}
	return ""
}

// KnownEventType reports whether t is one of the feed's event types.
func KnownEventType(t string) bool {
	for rt := 1; rt < 256; rt++ {
		if EventType(sku.RecordType(rt)) == t {
			return true
		}
	}
	return false
}

// CloudEvent is one feed event, a CloudEvents 1.0 JSON object
// (github.com/cloudevents/spec, json-format.md). id is the feed cursor of
// the record, so (source, id) names one durable record for good; the
// extension seckillindex is its log index. Its fields and their names are
// the feed's public contract with downstream consumers; seckillctl inspect
// renders a record's Data with them too.
type CloudEvent struct {
	SpecVersion     string    `json:"specversion"`
	ID              string    `json:"id"`
	Source          string    `json:"source"`
	Type            string    `json:"type"`
	Subject         string    `json:"subject,omitempty"`
	Time            string    `json:"time"`
	DataContentType string    `json:"datacontenttype"`
	SeckillIndex    uint64    `json:"seckillindex"`
	Data            EventData `json:"data"`
}

// EventData is an event's data: the record's fields, and for the events
// of a reservation its immutable fields (request_id, user_id, token_id,
// created_at, expire_at). Times are RFC 3339 with milliseconds, UTC;
// amounts in minor units.
type EventData struct {
	CampaignID    string          `json:"campaign_id"`
	SKUID         string          `json:"sku_id"`
	ReservationID string          `json:"reservation_id,omitempty"`
	RequestID     string          `json:"request_id,omitempty"`
	UserID        string          `json:"user_id,omitempty"`
	TokenID       uint32          `json:"token_id,omitempty"`
	CreatedAt     string          `json:"created_at,omitempty"`
	ExpireAt      string          `json:"expire_at,omitempty"`
	PaymentID     string          `json:"payment_id,omitempty"`
	Amount        *int64          `json:"amount,omitempty"`
	Reason        string          `json:"reason,omitempty"`
	TokenReleased *bool           `json:"token_released,omitempty"`
	Outcome       string          `json:"outcome,omitempty"`
	Definition    *DefinitionData `json:"definition,omitempty"`
	// Tier and Risk are what the reserve's or entry's pass said (created
	// events of reserves made with a pass; entered events: the tier, and
	// the risk when the pass carried a risk level or subject keys; the
	// pass's subject keys are not sent).
	Tier *uint8 `json:"tier,omitempty"`
	Risk *uint8 `json:"risk,omitempty"`
	// Lottery holds the lottery records' fields (and a winner's
	// reservation's entry).
	Lottery *LotteryData `json:"lottery,omitempty"`
	Cell    *CellData    `json:"cell,omitempty"` // granted, returned, epoch
}

// LotteryData is the lottery part of an event's data. Hashes are hex. The
// committed event leaves out the server seed and the pseudonym key.
type LotteryData struct {
	EntriesOpenAt  string   `json:"entries_open_at,omitempty"`  // committed
	EntriesCloseAt string   `json:"entries_close_at,omitempty"` // committed
	Waitlist       *uint32  `json:"waitlist,omitempty"`         // committed: its length
	EntrySeq       uint32   `json:"entry_seq,omitempty"`        // entered; created (WON)
	FromWaitlist   bool     `json:"from_waitlist,omitempty"`    // created (WON): a promotion
	Entries        *uint32  `json:"entries,omitempty"`          // entries_closed
	EntriesRoot    string   `json:"entries_root,omitempty"`     // entries_closed
	Round          uint64   `json:"round,omitempty"`            // draw_started
	Randomness     string   `json:"randomness,omitempty"`       // draw_started
	Signature      string   `json:"signature,omitempty"`        // draw_started, when the draw was given the beacon's signature
	WaitlistSeqs   []uint32 `json:"waitlist_entry_seqs,omitempty"`
	Winners        *uint32  `json:"winners,omitempty"`       // draw_done
	WinnersRoot    string   `json:"winners_root,omitempty"`  // draw_done
	WaitlistRoot   string   `json:"waitlist_root,omitempty"` // draw_done
	Lost           *uint32  `json:"lost,omitempty"`          // waitlist_closed: the entrants still waiting, who lose
}

// DefinitionData is a seckill.sku.defined event's definition (never the
// reservation id key).
type DefinitionData struct {
	StartAt                 string `json:"start_at"`
	EndAt                   string `json:"end_at"`
	PaymentWindowMs         int64  `json:"payment_window_ms"`
	SaleLimit               uint32 `json:"sale_limit"`
	ReleaseOnClose          bool   `json:"release_on_close"`
	EntryPassRequired       bool   `json:"entry_pass_required,omitempty"`
	MaxUnpaidPerSubject     uint32 `json:"max_unpaid_per_subject,omitempty"`
	PaymentWindowHighRiskMs int64  `json:"payment_window_high_risk_ms,omitempty"`
	PurchaseLimit           string `json:"purchase_limit,omitempty"` // "campaign"; absent: "sku"
}

// eventSource is the CloudEvents source of a SKU's events.
func eventSource(campaignID, skuID string) string { return "/seckill/" + campaignID + "/" + skuID }

// NewEvent maps one durable record to its event: a pure function of the
// record, its index and id, the SKU's definition and its reservation ids
// (ids: sku.NewReservationIDs of def) and, for the records after RESERVED,
// the reservation's view (only its immutable fields are read, so a later
// state does not change the event; a zero view leaves them out).
func NewEvent(r sku.Record, index uint64, id string, def sku.Definition, ids *sku.ReservationIDs, res sku.View) CloudEvent {
	e := CloudEvent{
		SpecVersion:     "1.0",
		ID:              id,
		Source:          eventSource(def.CampaignID, def.SKUID),
		Type:            EventType(r.Type),
		Time:            timefmt.Millis(r.At),
		DataContentType: "application/json",
		SeckillIndex:    index,
		Data:            EventData{CampaignID: def.CampaignID, SKUID: def.SKUID},
	}
	d := &e.Data
	switch r.Type {
	case sku.RecordDefine:
		d.Definition = NewDefinitionData(r.Def)
	case sku.RecordReserved:
		res = sku.View{RequestID: r.RequestID, UserID: r.UserID, TokenID: r.Token, CreatedAt: r.At, ExpireAt: r.ExpireAt}
		d.setReservation(r.Seq, ids, res)
		if r.Holder != (sku.Holder{}) {
			tier, risk := r.Holder.Tier, r.Holder.Risk
			d.Tier, d.Risk = &tier, &risk
		}
	case sku.RecordRejected:
		d.RequestID, d.UserID, d.Outcome = r.RequestID, r.UserID, r.Outcome.String()
	case sku.RecordPaid, sku.RecordRefundRequired:
		d.setReservation(r.Seq, ids, res)
		amount := r.Amount
		d.PaymentID, d.Amount = r.PaymentID, &amount
	case sku.RecordClosed:
		d.setReservation(r.Seq, ids, res)
		release := r.Release
		d.Reason, d.TokenReleased = r.Reason.String(), &release
	case sku.RecordReleased:
		d.setReservation(r.Seq, ids, res)
	case sku.RecordGrant, sku.RecordReturn, sku.RecordEpoch:
		d.setCell(r, def)
	default:
		d.setLottery(r, ids, res)
	}
	e.Subject = d.ReservationID
	return e
}

// NewDefinitionData renders a definition as the seckill.sku.defined event
// carries it.
func NewDefinitionData(def sku.Definition) *DefinitionData {
	d := &DefinitionData{
		StartAt: timefmt.Millis(def.StartAt), EndAt: timefmt.Millis(def.EndAt),
		PaymentWindowMs: def.PaymentWindowMs, SaleLimit: def.SaleLimit, ReleaseOnClose: def.ReleaseOnClose,
		EntryPassRequired: def.EntryPass.Required, MaxUnpaidPerSubject: def.MaxUnpaidPerSubject,
		PaymentWindowHighRiskMs: def.PaymentWindowHighRiskMs,
	}
	if def.PurchaseLimit != sku.PurchaseLimitSKU {
		d.PurchaseLimit = def.PurchaseLimit.String()
	}
	return d
}

// NewLotteryRules renders a lottery's public rules as the
// seckill.lottery.committed event carries them; nil for none.
func NewLotteryRules(rules *sku.LotteryRules) *LotteryData {
	if rules == nil {
		return nil
	}
	waitlist := rules.Waitlist
	return &LotteryData{EntriesOpenAt: timefmt.Millis(rules.EntriesOpenAt), EntriesCloseAt: timefmt.Millis(rules.EntriesCloseAt), Waitlist: &waitlist}
}

// setLottery fills the data of a lottery record.
func (d *EventData) setLottery(r sku.Record, ids *sku.ReservationIDs, res sku.View) {
	l := &LotteryData{}
	d.Lottery = l
	lot := r.Lot
	if lot == nil {
		lot = &sku.LotteryFields{}
	}
	switch r.Type {
	case sku.RecordLotteryCommitted:
		if rules := NewLotteryRules(r.Def.Lottery); rules != nil {
			*l = *rules
		}
	case sku.RecordEntered:
		tier := r.Holder.Tier
		d.RequestID, d.UserID, d.Tier, l.EntrySeq = r.RequestID, r.UserID, &tier, r.Seq
		if h := r.Holder; h.Risk != 0 || h.Subjects != 0 { // the pass's group of ENTERED
			risk := h.Risk
			d.Risk = &risk
		}
	case sku.RecordEntriesClosed:
		count := lot.Count
		l.Entries, l.EntriesRoot = &count, hex.EncodeToString(lot.Root[:])
	case sku.RecordDrawStarted:
		l.Round, l.Randomness, l.Signature = lot.Round, hex.EncodeToString(lot.Randomness[:]), hex.EncodeToString(lot.Signature)
	case sku.RecordWon:
		d.setReservation(r.Seq, ids, res)
		l.EntrySeq, l.FromWaitlist = lot.EntrySeq, lot.FromWaitlist
	case sku.RecordWaitlisted:
		l.WaitlistSeqs = lot.Seqs
	case sku.RecordDrawDone:
		count := lot.Count
		l.Winners, l.WinnersRoot, l.WaitlistRoot = &count, hex.EncodeToString(lot.Root[:]), hex.EncodeToString(lot.WaitlistRoot[:])
	case sku.RecordLotteryEnded:
		left := lot.Count
		l.Lost = &left
	}
}

// CellData is the data of a celled SKU's quota event: the cell, and for a
// grant or a return its allocation (or return) seq, the epoch it was made
// under and the token ranges (inclusive) with their count.
type CellData struct {
	Cell   string           `json:"cell"`
	Seq    uint64           `json:"seq,omitempty"`
	Epoch  uint64           `json:"epoch"`
	Ranges []sku.TokenRange `json:"ranges,omitempty"`
	Units  uint64           `json:"units,omitempty"`
}

// setCell fills the data of a GRANT, RETURN or EPOCH record.
func (d *EventData) setCell(r sku.Record, def sku.Definition) {
	d.Cell = NewCellData(def.Cell, r.Cell)
}

// NewCellData renders cell's allocation a (a grant, a return, or an epoch
// alone; nil: the cell alone) as the cell events carry it.
func NewCellData(cell string, a *sku.Allocation) *CellData {
	c := &CellData{Cell: cell}
	if a != nil {
		c.Seq, c.Epoch, c.Ranges, c.Units = a.Seq, a.Epoch, a.Ranges, a.Units()
	}
	return c
}

// setReservation fills the reservation's id and immutable fields.
func (d *EventData) setReservation(seq uint32, ids *sku.ReservationIDs, res sku.View) {
	d.ReservationID = ids.Format(seq)
	d.RequestID, d.UserID, d.TokenID = res.RequestID, res.UserID, res.TokenID
	d.CreatedAt, d.ExpireAt = timefmt.OptionalMillis(res.CreatedAt), timefmt.OptionalMillis(res.ExpireAt)
}

// needsReservation reports whether a record's event carries immutable
// fields that only the reservation's view has.
func needsReservation(t sku.RecordType) bool {
	switch t {
	case sku.RecordPaid, sku.RecordRefundRequired, sku.RecordClosed, sku.RecordReleased, sku.RecordWon:
		return true
	}
	return false
}
