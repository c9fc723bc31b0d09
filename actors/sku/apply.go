package sku

import (
	"errors"
	"fmt"
	"unsafe"
)

// ErrDoesNotApply is wrapped by Apply when a record does not fit the state:
// on replay it means the log and the state machine disagree (a corrupt or
// foreign log), and the SKU must not start.
var ErrDoesNotApply = errors.New("record does not apply")

func notApply(r *Record, format string, args ...any) error {
	return fmt.Errorf("%w: %s at %d: %s", ErrDoesNotApply, r.Type, r.At, fmt.Sprintf(format, args...))
}

// Apply changes the state by one record. It checks every precondition the
// deciding command checked, so a log that does not describe a legal history
// is refused with an error wrapping ErrDoesNotApply and the Machine is left
// unchanged. Apply reads no clock: all times come from the record.
func (m *Machine) Apply(r *Record) error { return m.apply(r, false) }

// apply is Apply; decided is set for a record this Machine has just decided,
// whose checks of its input (ids, holder, cap) and indexes (request_id and
// user not yet known) the deciding command made a moment ago: they are not
// repeated on the hot path.
func (m *Machine) apply(r *Record, decided bool) error {
	if !m.defined && r.Type != RecordDefine {
		return notApply(r, "SKU not defined yet")
	}
	if r.At < m.lastAt {
		return notApply(r, "time goes backwards (last %d)", m.lastAt)
	}
	var err error
	switch r.Type {
	case RecordDefine:
		err = m.applyDefine(r)
	case RecordReserved:
		err = m.applyReserved(r, decided)
	case RecordRejected:
		err = m.applyRejected(r)
	case RecordPaid:
		err = m.applyPaid(r)
	case RecordClosed:
		err = m.applyClosed(r)
	case RecordRefundRequired:
		err = m.applyRefund(r)
	case RecordReleased:
		err = m.applyReleased(r)
	case RecordGrant:
		err = m.applyGrant(r)
	case RecordReturn:
		err = m.applyReturn(r)
	case RecordEpoch:
		err = m.applyEpoch(r)
	case RecordPaused, RecordResumed:
		if m.paused == (r.Type == RecordPaused) {
			return notApply(r, "already in that state")
		}
		m.paused = r.Type == RecordPaused
	default:
		if !r.Type.isLottery() {
			return notApply(r, "unknown record type")
		}
		err = m.applyLottery(r)
	}
	if err != nil {
		return err
	}
	m.lastAt = r.At
	return nil
}

func (m *Machine) applyDefine(r *Record) error {
	if m.defined {
		if err := m.def.CheckRedefine(r.Def); err != nil {
			return notApply(r, "%v", err)
		}
	} else if err := r.Def.Validate(); err != nil {
		return notApply(r, "%v", err)
	}
	m.setDefinition(r.Def)
	return nil
}

// reservedKeys returns the index hashes of r's ids: those ReserveWith
// took when r's ids are the very strings it hashed (the record it is
// emitting), else hashed anew (a record replayed). Same strings, same
// hashes: identity is enough, and it costs no compare of their bytes.
func (m *Machine) reservedKeys(r *Record) (request, user uint64) {
	k := &m.reserving
	if sameString(k.requestID, r.RequestID) && sameString(k.userID, r.UserID) {
		return k.request, k.user
	}
	return m.byRequest.hash(r.RequestID), m.live.hash(r.UserID)
}

// sameString reports whether a and b are the same non-empty string in
// memory (not merely equal).
func sameString(a, b string) bool {
	return len(a) == len(b) && len(a) > 0 && unsafe.StringData(a) == unsafe.StringData(b)
}

func (m *Machine) applyReserved(r *Record, decided bool) error {
	switch {
	case r.Seq != m.table.count+1 || r.Seq > MaxReservations:
		return notApply(r, "seq %d, want %d", r.Seq, m.table.count+1)
	case r.Token == 0 || r.Token != m.pool.next():
		return notApply(r, "token %d, want %d", r.Token, m.pool.next())
	case r.ExpireAt != r.At+m.def.PaymentWindowFor(r.Holder):
		return notApply(r, "expire_at %d does not follow the payment window", r.ExpireAt)
	}
	// A decided RESERVED comes from ReserveWith (its only emitter), which
	// checked the ids, the holder, the cap and the indexes a moment ago.
	if !decided {
		switch {
		case !ValidID(r.RequestID) || !ValidID(r.UserID):
			return notApply(r, "invalid request or user id")
		case r.Holder.Validate() != nil:
			return notApply(r, "%v", r.Holder.Validate())
		case m.overCap(&r.Holder):
			return notApply(r, "a subject key is at max_unpaid_per_subject %d", m.def.MaxUnpaidPerSubject)
		}
		if _, ok := m.byRequest.get(r.RequestID); ok {
			return notApply(r, "request_id %q already decided", r.RequestID)
		}
		if _, ok := m.rejected[r.RequestID]; ok {
			return notApply(r, "request_id %q already decided", r.RequestID)
		}
		if _, ok := m.live.get(r.UserID); ok {
			return notApply(r, "user %q already has a live purchase", r.UserID)
		}
	}
	row := reservation{token: r.Token, state: StatePendingPayment, flags: flagHoldsToken}
	if m.shortWindow(&r.Holder) {
		row.flags |= flagShortWindow
	}
	seq := m.table.add(row, r.RequestID, r.UserID, r.At)
	m.pool.take(r.Token, seq)
	hr, hu := m.reservedKeys(r)
	m.byRequest.insertHashed(hr, seq)
	m.live.insertHashed(hu, seq)
	m.states[StatePendingPayment]++
	if !r.Holder.empty() { // valid: checked above, or by ReserveWith
		m.holders.add(seq, r.Holder)
		m.countUnpaid(&r.Holder)
		if m.shortWindow(&r.Holder) {
			m.queueHighRisk(seq)
		}
	}
	return nil
}

func (m *Machine) applyRejected(r *Record) error {
	if !ValidID(r.RequestID) || !ValidID(r.UserID) {
		return notApply(r, "invalid request or user id")
	}
	if _, ok := m.byRequest.get(r.RequestID); ok {
		return notApply(r, "request_id %q already decided", r.RequestID)
	}
	if _, ok := m.rejected[r.RequestID]; ok {
		return notApply(r, "request_id %q already decided", r.RequestID)
	}
	switch r.Outcome {
	case OutcomeSoldOut:
		if m.pool.celled {
			return notApply(r, "a celled SKU never records SOLD_OUT")
		}
		if m.pool.next() != 0 || r.Seq != 0 {
			return notApply(r, "SOLD_OUT with %d tokens available", m.pool.available())
		}
	default:
		return notApply(r, "outcome %s is not recorded", r.Outcome)
	}
	m.addRejection(rejection{requestID: r.RequestID, userID: r.UserID, outcome: r.Outcome})
	return nil
}

func (m *Machine) applyPaid(r *Record) error {
	res := m.table.mut(r.Seq)
	switch {
	case res == nil:
		return notApply(r, "no reservation %d", r.Seq)
	case !canMove(res.state, StatePaid):
		return notApply(r, "reservation %d is %s", r.Seq, res.state)
	case r.At >= m.table.expireAt(r.Seq) && !mutantTimerExpiry:
		return notApply(r, "payment at %d is not before expire_at %d", r.At, m.table.expireAt(r.Seq))
	case !ValidID(r.PaymentID):
		return notApply(r, "invalid payment id")
	}
	m.settleUnpaid(r.Seq)
	m.pool.confirm(res.token)
	x := m.table.editExtra(res)
	x.paymentID, x.amount, x.paidAt = r.PaymentID, r.Amount, r.At
	m.move(res, StatePaid)
	return nil
}

func (m *Machine) applyClosed(r *Record) error {
	res := m.table.mut(r.Seq)
	switch {
	case res == nil:
		return notApply(r, "no reservation %d", r.Seq)
	case !canMove(res.state, StateClosed):
		return notApply(r, "reservation %d is %s", r.Seq, res.state)
	case r.Reason != ReasonExpired && r.Reason != ReasonCancelled:
		return notApply(r, "bad close reason %d", r.Reason)
	case r.Reason == ReasonExpired && r.At < m.table.expireAt(r.Seq):
		return notApply(r, "expired at %d before expire_at %d", r.At, m.table.expireAt(r.Seq))
	}
	m.live.remove(m.table.userID(r.Seq), r.Seq)
	m.settleUnpaid(r.Seq)
	res.flags = res.flags&^flagReasonMask | uint8(r.Reason)
	m.table.editExtra(res).closedAt = r.At
	if r.Release {
		m.pool.release(res.token)
		res.flags &^= flagHoldsToken
	} else {
		m.heldClosed++
	}
	m.move(res, StateClosed)
	return nil
}

func (m *Machine) applyRefund(r *Record) error {
	res := m.table.mut(r.Seq)
	switch {
	case res == nil:
		return notApply(r, "no reservation %d", r.Seq)
	case res.state == StatePendingPayment:
		return notApply(r, "reservation %d is %s: nothing to refund", r.Seq, res.state)
	case !ValidID(r.PaymentID):
		return notApply(r, "invalid payment id")
	case res.state == StatePaid && m.table.extra(res).paymentID == r.PaymentID:
		return notApply(r, "payment %q paid reservation %d: not a refund", r.PaymentID, r.Seq)
	}
	if _, ok := m.refundRecorded(r.Seq, r.PaymentID); ok {
		return notApply(r, "payment %q already recorded", r.PaymentID)
	}
	x := m.table.editExtra(res)
	x.refundPayments = append(x.refundPayments, r.PaymentID)
	x.refundAmounts = append(x.refundAmounts, r.Amount)
	res.flags |= flagRefund
	m.addRefund(Refund{ReservationSeq: r.Seq, PaymentID: r.PaymentID, Amount: r.Amount, At: r.At})
	return nil
}

func (m *Machine) applyReleased(r *Record) error {
	res := m.table.mut(r.Seq)
	switch {
	case res == nil:
		return notApply(r, "no reservation %d", r.Seq)
	case res.state != StateClosed || !res.holdsToken():
		return notApply(r, "reservation %d holds no releasable token", r.Seq)
	}
	m.pool.release(res.token)
	res.flags = res.flags&^flagHoldsToken | flagReleasedApart
	m.heldClosed--
	return nil
}

// move changes a reservation's state along an edge of the state machine.
func (m *Machine) move(res *reservation, to State) {
	if !canMove(res.state, to) {
		panic(fmt.Sprintf("sku: illegal transition %s -> %s", res.state, to))
	}
	m.states[res.state]--
	m.states[to]++
	res.state = to
}
