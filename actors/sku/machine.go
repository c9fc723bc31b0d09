// Package sku is the pure state machine of one SKU in a flash sale: its
// token pool, its reservations and their state machine. It does no I/O and
// reads no clock: every command takes the time as an argument, decides, and
// returns the records that describe the change (already applied to the
// Machine) together with the reply. The caller persists the records and only
// then releases the reply. Replaying the same records with Apply, from an
// empty Machine, rebuilds the same state (compare Hash).
//
// This follows etcd raft's split: the algorithm is a plain struct, storage
// and network belong to the caller (see actors.SKU for the actor that drives
// it and wal for the log).
//
// The sale gate (Gate, gate.go) is the one owner of the rule that says
// whether a SKU sells at a moment (window, pause, sold out): Machine.Reserve
// decides with it, and the HTTP ingress asks it for its fast answers and
// its status instead of deciding anything of its own.
//
// A Machine is not safe for concurrent use: one goroutine (the SKU actor)
// owns it.
package sku

import (
	"crypto/subtle"
	"fmt"
	"sync/atomic"
)

// Machine is one SKU's state. The zero value is an undefined SKU; its first
// record must be RecordDefine.
type Machine struct {
	def Definition
	// defStamp changes with def (definitionChanged): DefinitionStamp.
	defStamp uint64
	idTags   *idTagger // from def.IDKey: the tags of reservation ids
	defined  bool
	paused   bool
	// lastAt is the latest decision time applied (ms). Decisions use
	// max(now, lastAt), so record times never go backwards even if the wall
	// clock does, and expire_at is monotonic in seq.
	lastAt int64

	pool  tokenPool
	table table
	cell  cellState // a celled SKU's grants, returns and epoch (grants.go)

	// byRequest maps an accepted request_id to its reservation seq.
	byRequest index
	// rejected maps a durably rejected request_id to its position in
	// rejections (derived: rebuilt when a state is decoded).
	rejected   map[string]uint32
	rejections rejectionLog
	// live maps a user_id to its live (PENDING_PAYMENT or PAID) reservation.
	live index
	// reserving holds, while ReserveWith emits its RESERVED record, the
	// ids' index hashes it took to look them up (applyReserved).
	reserving keyHashes
	// refunds lists every payment that must be refunded, in log order.
	refunds []Refund
	// refundIndex finds a payment in refunds by reservation and
	// payment_id (derived: rebuilt when a state is decoded).
	refundIndex refundIndex

	states [4]uint32 // reservations by State
	// heldClosed counts CLOSED reservations that still hold their token.
	heldClosed uint32
	// expireCursor is the lowest seq that may still be PENDING_PAYMENT. It
	// is derived state (not part of Hash).
	expireCursor uint32

	// holders keeps the Holder of every reservation made with one, in seq
	// order (caps.go).
	holders holderList
	// unpaid counts PENDING_PAYMENT reservations per subject key (derived).
	unpaid subjectCounts
	// highRisk lists, in seq order, the reservations with the high-risk
	// payment window (derived), and riskCursor is the first of them the
	// high-risk expiry walk has not passed.
	highRisk   []uint32
	riskCursor int

	// lot is a lottery SKU's entries and draw (lottery_state.go); nil for
	// a SKU sold first come, first served.
	lot *lotteryState
}

// Refund is a payment received for a reservation that was already closed.
type Refund struct {
	ReservationSeq uint32
	ReservationID  string // filled by Machine.Refunds
	PaymentID      string
	Amount         int64 // minor units
	At             int64 // ms
}

// New returns an empty, undefined Machine.
func New() *Machine {
	m := &Machine{
		rejected:     make(map[string]uint32),
		expireCursor: 1,
		unpaid:       newSubjectCounts(),
	}
	m.byRequest = newIndex(&m.table, keyRequestID)
	m.live = newIndex(&m.table, keyUserID)
	return m
}

// Defined reports whether a definition has been applied.
func (m *Machine) Defined() bool { return m.defined }

// definitionStamps numbers the changes of every Machine's definition, so
// that a stamp names one definition of one Machine in the process.
var definitionStamps atomic.Uint64

// definitionChanged is called by whatever assigns to m.def.
func (m *Machine) definitionChanged() { m.defStamp = definitionStamps.Add(1) }

// DefinitionStamp names the current definition: it is the same as long as
// Definition returns the same value, on this Machine and no other. A
// holder of a copy of the definition (the shell's published view) copies
// it again only when the stamp moved.
func (m *Machine) DefinitionStamp() uint64 { return m.defStamp }

// Definition returns the current definition.
func (m *Machine) Definition() Definition { return m.def }

// Paused reports whether admission is paused.
func (m *Machine) Paused() bool { return m.paused }

// LastAt returns the latest decision time applied, in ms.
func (m *Machine) LastAt() int64 { return m.lastAt }

// Counts are the SKU's counters. SaleLimit = Available + Reserved +
// Confirmed; for a celled SKU Granted - Returned = Available + Reserved +
// Confirmed instead, and SaleLimit is the whole SKU's, across cells.
type Counts struct {
	SaleLimit       uint32
	Available       uint32
	Reserved        uint32 // tokens bound to PENDING_PAYMENT reservations, or held by closed ones
	Confirmed       uint32 // tokens sold: bound to PAID reservations
	Reservations    uint32 // all reservations ever made
	PendingPayment  uint32
	Paid            uint32
	Closed          uint32
	HeldClosed      uint32 // CLOSED but still holding a token (release_on_close=false)
	RefundsRequired uint32
	Rejected        uint32 // durable rejections recorded
	Granted         uint64 // celled: units in GRANT records; 0 otherwise
	Returned        uint64 // celled: units in RETURN records; 0 otherwise
}

// Check reports whether the counts balance, in O(1): sale_limit =
// available + reserved + confirmed (celled: granted - returned = available
// + reserved + confirmed), and reservations = pending_payment + paid +
// closed. The error names the values that disagree. The core asserts it
// after every round; Audit recounts what the counts summarise.
func (c Counts) Check(celled bool) error {
	owned := uint64(c.Available) + uint64(c.Reserved) + uint64(c.Confirmed)
	switch {
	case celled && (c.Returned > c.Granted || owned != c.Granted-c.Returned):
		return fmt.Errorf("granted %d - returned %d != available %d + reserved %d + confirmed %d",
			c.Granted, c.Returned, c.Available, c.Reserved, c.Confirmed)
	case !celled && owned != uint64(c.SaleLimit):
		return fmt.Errorf("sale_limit %d != available %d + reserved %d + confirmed %d", c.SaleLimit, c.Available, c.Reserved, c.Confirmed)
	case uint64(c.PendingPayment)+uint64(c.Paid)+uint64(c.Closed) != uint64(c.Reservations):
		return fmt.Errorf("reservations %d != pending_payment %d + paid %d + closed %d", c.Reservations, c.PendingPayment, c.Paid, c.Closed)
	}
	return nil
}

// Counts returns the current counters in O(1).
func (m *Machine) Counts() Counts {
	return Counts{
		SaleLimit:       m.pool.saleLimit,
		Available:       m.pool.available(),
		Reserved:        m.pool.reserved,
		Confirmed:       m.pool.confirmed,
		Reservations:    m.table.count,
		PendingPayment:  m.states[StatePendingPayment],
		Paid:            m.states[StatePaid],
		Closed:          m.states[StateClosed],
		HeldClosed:      m.heldClosed,
		RefundsRequired: uint32(len(m.refunds)),
		Rejected:        uint32(len(m.rejected)),
		Granted:         m.cell.granted,
		Returned:        m.cell.returned,
	}
}

// Refunds returns a copy of the payments that need a refund, in log order.
func (m *Machine) Refunds() []Refund {
	out := append([]Refund(nil), m.refunds...)
	for i := range out {
		out[i].ReservationID = m.idTags.format(m.def.CampaignID, m.def.SKUID, m.def.Cell, out[i].ReservationSeq)
	}
	return out
}

// Issued reports whether the SKU issued the reservation id of cell (""
// for a four-part id), seq and tag, the tag compared in constant time: an
// id with a wrong tag names no reservation, and neither does one that
// names another cell than the SKU's (a reservation of another cell, which
// has its own key, or the same reservation under a second id).
func (m *Machine) Issued(cell string, seq uint32, tag string) bool {
	if m.idTags == nil || cell != m.def.Cell {
		return false
	}
	want := m.idTags.tag(seq)
	return len(tag) == len(want) && subtle.ConstantTimeCompare(want[:], []byte(tag)) == 1
}

// setDefinition installs d and what derives from it.
func (m *Machine) setDefinition(d Definition) {
	if m.lot != nil {
		d.Lottery = &m.lot.rules // recorded by LOTTERY_COMMITTED, never changed
	}
	m.def, m.defined = d, true
	m.definitionChanged()
	m.pool.saleLimit = d.SaleLimit
	m.pool.celled = d.Cell != ""
	m.idTags = newIDTagger(d.IDKey)
	m.table.windows = [2]int64{d.PaymentWindowMs, d.PaymentWindowFor(Holder{Risk: 1})}
	m.sizeIndexes()
}

// presizedReservations bounds the reservations a SKU's indexes are sized
// for when it is defined: 32,768 slots, 160 KiB per index, paid by every
// SKU of a sale_limit at least this large.
const presizedReservations = 1 << 14

// sizeIndexes sizes the two reservation indexes for the sale_limit (at
// most presizedReservations) before the first reserve. A flash sale makes
// most of its reservations in its first seconds, the busiest of the sale:
// an index growing then moves every key it holds, a hash and a row read
// each, on the SKU's one actor that every buyer waits behind. The user
// index never holds more than sale_limit live purchases (each holds a
// token); the request_id index holds every reservation, sale_limit of
// them when the SKU sells out. Later inserts grow the tables as before.
func (m *Machine) sizeIndexes() {
	if m.table.count != 0 {
		return
	}
	n := int(min(uint64(m.def.SaleLimit), presizedReservations))
	m.byRequest.presize(n)
	m.live.presize(n)
}

// Get returns a copy of reservation seq.
func (m *Machine) Get(seq uint32) (View, bool) {
	r := m.table.get(seq)
	if r == nil {
		return View{}, false
	}
	return m.view(seq, r), true
}

// Lookup returns the durable answer a request_id got: the reservation it
// made, or the rejection it was given (its Reservation then names only the
// request_id and the user it was given to). ok is false when the request_id is
// unknown (it may have been refused by the ingress without reaching here).
func (m *Machine) Lookup(requestID string) (Result, bool) {
	return m.lookupHashed(requestID, m.byRequest.hash(requestID))
}

// decided reports whether requestID, whose byRequest hash is h, has an
// answer: what Lookup finds, without building the answer (a reserve's
// lookup is nearly always a miss, and a Result is about 250 bytes).
func (m *Machine) decided(requestID string, h uint64) bool {
	if _, ok := m.byRequest.getHashed(h, requestID); ok {
		return true
	}
	_, ok := m.rejected[requestID]
	return ok
}

// lookupHashed is Lookup of a request_id whose byRequest hash is h.
func (m *Machine) lookupHashed(requestID string, h uint64) (Result, bool) {
	if seq, ok := m.byRequest.getHashed(h, requestID); ok {
		return Result{Outcome: OutcomeAccepted, Reservation: m.view(seq, m.table.get(seq))}, true
	}
	if rj, ok := m.rejection(requestID); ok {
		return Result{Outcome: rj.outcome, Reservation: View{RequestID: requestID, UserID: rj.userID}}, true
	}
	return Result{}, false
}

func (m *Machine) view(seq uint32, r *reservation) View {
	v := View{
		ReservationID:  m.idTags.format(m.def.CampaignID, m.def.SKUID, m.def.Cell, seq),
		RequestID:      m.table.requestID(seq),
		UserID:         m.table.userID(seq),
		TokenID:        r.token,
		State:          r.state,
		CloseReason:    r.reason(),
		CreatedAt:      m.table.createdAt(seq),
		ExpireAt:       m.table.expireAt(seq),
		Version:        m.table.version(r),
		HoldsToken:     r.holdsToken(),
		RefundRequired: r.refundRequired(),
	}
	if x := m.table.extra(r); x != nil {
		v.PaymentID, v.Amount, v.PaidAt, v.ClosedAt = x.paymentID, x.amount, x.paidAt, x.closedAt
		// Shared by length, as a frozen state shares it (editExtra): a
		// view is read only, and an append to it copies.
		v.RefundPayments = x.refundPayments[:len(x.refundPayments):len(x.refundPayments)]
	}
	return v
}

// decisionTime is the time a decision made now is recorded with.
func (m *Machine) decisionTime(now int64) int64 {
	if now < m.lastAt {
		return m.lastAt
	}
	return now
}

// emit applies a record decided on this Machine and appends it to out. A
// record the Machine itself decided must apply: failure is a programmer
// error, so it panics with both sides named. r is read, not kept: a
// record (about 400 bytes) is copied once, into out.
func (m *Machine) emit(r *Record, out []Record) []Record {
	if err := m.apply(r, true); err != nil {
		panic(fmt.Sprintf("sku: decided record does not apply: %v", err))
	}
	out = append(out, *r)
	if m.lot != nil && (r.Type == RecordClosed || r.Type == RecordReleased) {
		out = m.promoteWaitlist(r.At, out) // a token came back: the waitlist's
	}
	return out
}

// EachRequestID calls fn with every decided request_id: accepted ones in
// seq order, then the recorded rejections in no particular order.
func (m *Machine) EachRequestID(fn func(requestID string)) {
	for seq := uint32(1); seq <= m.table.count; seq++ {
		fn(m.table.requestID(seq))
	}
	for id := range m.rejected {
		fn(id)
	}
}
