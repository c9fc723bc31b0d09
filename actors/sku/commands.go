package sku

// The commands. Each takes the caller's clock reading now (ms), decides on
// the current state, applies the records it produces and appends them to
// out. A command that produces no record changes nothing. The caller must
// not release the Result before every record it depends on is durable: the
// records appended here, and any record appended earlier.

// expireOnSoldOut bounds the expiry work a reserve may do when it finds no
// token, before it answers SOLD_OUT.
const expireOnSoldOut = 64

// Define applies a first definition or an allowed redefinition (end_at
// later, sale_limit higher). It returns OutcomeOK with no record when d is
// the current definition, and an error wrapping ErrInvalidDefinition for a
// change that is not allowed. A lottery whose end_at has passed ends
// (LOTTERY_ENDED) before a redefinition applies: a later end_at does not
// bring it back.
func (m *Machine) Define(now int64, d Definition, out []Record) (Outcome, []Record, error) {
	if m.defined {
		if m.def.sameDefinition(d) {
			return OutcomeOK, out, nil
		}
		if err := m.def.CheckRedefine(d); err != nil {
			return OutcomeInvalid, out, err
		}
	}
	if err := d.ValidateNew(); err != nil {
		return OutcomeInvalid, out, err
	}
	at := m.decisionTime(now)
	if err := m.checkLotteryDefine(at, d); err != nil {
		return OutcomeInvalid, out, err
	}
	if m.defined {
		out = m.endIfDue(at, out)
	}
	return OutcomeOK, m.defineRecords(at, d, out), nil
}

// Reserve binds a token to a new reservation for userID, once per
// request_id. A repeat of a decided request_id answers the original result
// with Duplicate set; the same request_id from another user answers
// REQUEST_ID_REUSED. The window, the pause and sold out are the sale gate's
// (Gate) at the decision time max(now, LastAt). SOLD_OUT is recorded, up
// to MaxRecordedRejections, so a request_id keeps its answer;
// ALREADY_PURCHASED, NOT_STARTED, ENDED and PAUSED are not: they change
// with time, and a user with a live purchase clicking again must not make
// the log (and the rejection table) grow.
func (m *Machine) Reserve(now int64, requestID, userID string, out []Record) (Result, []Record) {
	return m.ReserveWith(now, requestID, userID, Holder{}, out)
}

// ReserveWith is Reserve for a buyer an entry pass vouched for: h (its
// tier, risk and subject keys) is recorded with the reservation. When
// max_unpaid_per_subject is set and one of h's subject keys already has
// that many PENDING_PAYMENT reservations, it answers SUBJECT_LIMIT, not
// recorded (after closing up to expireOnSoldOut due reservations, whose
// expiry may free the key); the user's own live purchase is answered
// first, and the stock after. Risk >= 1 gets the high-risk payment window
// (Definition.PaymentWindowFor), and the recorded expire_at keeps it. A
// malformed h answers INVALID.
func (m *Machine) ReserveWith(now int64, requestID, userID string, h Holder, out []Record) (Result, []Record) {
	if !m.defined {
		return Result{Outcome: OutcomeNotFound}, out
	}
	if !ValidID(requestID) || !ValidID(userID) || h.Validate() != nil {
		return Result{Outcome: OutcomeInvalid}, out
	}
	if m.lot != nil {
		return Result{Outcome: OutcomeLotterySale}, out // entries, not reserves
	}
	// Each id is hashed once: to look it up here, and to index it when
	// the reservation is applied (keyHashes).
	keys := keyHashes{requestID: requestID, userID: userID,
		request: m.byRequest.hash(requestID), user: m.live.hash(userID)}
	if m.decided(requestID, keys.request) { // rare: a repeat
		res, _ := m.lookupHashed(requestID, keys.request)
		return KnownRequest(res, userID), out
	}
	at := m.decisionTime(now)
	// The window and the pause are answered first; sold out waits for the
	// user's own purchase and for expiry, below.
	if o, refused := m.gate(at).Refusal(); refused && o != OutcomeSoldOut {
		return Result{Outcome: o}, out
	}
	if seq, ok := m.live.getHashed(keys.user, userID); ok {
		if r := m.table.get(seq); r.state == StatePendingPayment && at >= m.table.expireAt(seq) {
			out = m.closeExpired(at, seq, out) // judged by expire_at, not by the timer
		} else {
			return Result{Outcome: OutcomeAlreadyPurchased, Reservation: m.view(seq, r)}, out
		}
	}
	if m.overCap(&h) {
		out = m.Expire(at, expireOnSoldOut, out)
		if m.overCap(&h) {
			return Result{Outcome: OutcomeSubjectLimit}, out
		}
	}
	// The window and the pause passed, so a refusal now is SOLD_OUT. The
	// user's own purchase is answered before the stock, and sold out is
	// decided only after up to expireOnSoldOut due reservations gave their
	// tokens back.
	if _, refused := m.gate(at).Refusal(); refused {
		out = m.Expire(at, expireOnSoldOut, out)
		if _, refused = m.gate(at).Refusal(); refused {
			return m.soldOut(at, requestID, userID, out)
		}
	}
	token := m.pool.next()
	seq := m.table.count + 1
	m.reserving = keys
	out = m.emit(&Record{Type: RecordReserved, At: at, Seq: seq, Token: token,
		ExpireAt: at + m.def.PaymentWindowFor(h), RequestID: requestID, UserID: userID, Holder: h}, out)
	m.reserving = keyHashes{}
	return Result{Outcome: OutcomeAccepted, Reservation: m.view(seq, m.table.get(seq))}, out
}

// Pay records payment paymentID for reservation seq. Before expire_at it
// moves PENDING_PAYMENT -> PAID; another payment_id on a PAID reservation
// answers PAYMENT_CONFLICT and is recorded for refund. At or after expire_at, or once closed, the
// reservation stays (or becomes) CLOSED, its token is released exactly once,
// and the payment is recorded as REFUND_REQUIRED: a late payment never
// resurrects an order.
func (m *Machine) Pay(now int64, seq uint32, paymentID string, amount int64, out []Record) (Result, []Record) {
	r := m.table.get(seq)
	if r == nil {
		return Result{Outcome: OutcomeNotFound}, out
	}
	if !ValidID(paymentID) {
		return Result{Outcome: OutcomeInvalid}, out
	}
	// A payment_id is the payment's idempotency key: its repeat must be
	// the same payment. Another amount is refused, recording nothing, so
	// the amount recorded first is never silently kept over a new one.
	if x := m.table.extra(r); x != nil && x.paymentID == paymentID && x.amount != amount {
		return m.result(OutcomePaymentIDReused, seq), out
	}
	refundAmount, refundRecorded := m.refundRecorded(seq, paymentID)
	if refundRecorded && refundAmount != amount {
		return m.result(OutcomePaymentIDReused, seq), out
	}
	at := m.decisionTime(now)
	switch r.state {
	case StatePaid:
		if m.table.extra(r).paymentID == paymentID {
			return m.result(OutcomeAlreadyPaid, seq), out
		}
		// A second payment for a paid order is money to give back: record
		// it for refund (once per payment_id), answer PAYMENT_CONFLICT.
		if !refundRecorded {
			out = m.emit(&Record{Type: RecordRefundRequired, At: at, Seq: seq, PaymentID: paymentID, Amount: amount}, out)
		}
		return m.result(OutcomePaymentConflict, seq), out
	case StatePendingPayment:
		if at < m.table.expireAt(seq) || mutantTimerExpiry {
			out = m.emit(&Record{Type: RecordPaid, At: at, Seq: seq, PaymentID: paymentID, Amount: amount}, out)
			return m.result(OutcomePaid, seq), out
		}
		out = m.closeExpired(at, seq, out)
	}
	// A PENDING_PAYMENT reservation has no refund recorded: refundRecorded
	// still holds after the close.
	if !refundRecorded {
		out = m.emit(&Record{Type: RecordRefundRequired, At: at, Seq: seq, PaymentID: paymentID, Amount: amount}, out)
	}
	return m.result(OutcomeRefundRequired, seq), out
}

// Close closes a PENDING_PAYMENT reservation. ReasonExpired before
// expire_at answers NOT_EXPIRED and changes nothing; ReasonCancelled at or
// after expire_at is recorded as EXPIRED, since expiry is decided by
// expire_at. With release_on_close the token goes back to the pool.
func (m *Machine) Close(now int64, seq uint32, reason CloseReason, out []Record) (Result, []Record) {
	r := m.table.get(seq)
	if r == nil {
		return Result{Outcome: OutcomeNotFound}, out
	}
	switch r.state {
	case StatePaid:
		return m.result(OutcomeNotClosable, seq), out
	case StateClosed:
		return m.result(OutcomeAlreadyClosed, seq), out
	}
	at := m.decisionTime(now)
	expired := at >= m.table.expireAt(seq)
	if reason == ReasonExpired && !expired {
		return m.result(OutcomeNotExpired, seq), out
	}
	if expired {
		reason = ReasonExpired
	}
	out = m.emit(&Record{Type: RecordClosed, At: at, Seq: seq, Reason: reason, Release: m.def.ReleaseOnClose}, out)
	return m.result(OutcomeClosed, seq), out
}

func (m *Machine) closeExpired(at int64, seq uint32, out []Record) []Record {
	return m.emit(&Record{Type: RecordClosed, At: at, Seq: seq, Reason: ReasonExpired, Release: m.def.ReleaseOnClose}, out)
}

// Release returns the token of a CLOSED reservation that still holds it
// (release_on_close=false). It is idempotent and never releases a paid
// reservation's token.
func (m *Machine) Release(now int64, seq uint32, out []Record) (Result, []Record) {
	r := m.table.get(seq)
	switch {
	case r == nil:
		return Result{Outcome: OutcomeNotFound}, out
	case r.state == StatePaid:
		return m.result(OutcomeNotClosable, seq), out
	case r.state == StatePendingPayment:
		return m.result(OutcomeNotClosed, seq), out
	case !r.holdsToken():
		return m.result(OutcomeAlreadyReleased, seq), out
	}
	out = m.emit(&Record{Type: RecordReleased, At: m.decisionTime(now), Seq: seq}, out)
	return m.result(OutcomeReleased, seq), out
}

// Pause stops admission; pay and close go on. Idempotent.
func (m *Machine) Pause(now int64, out []Record) (Outcome, []Record) {
	if !m.defined {
		return OutcomeNotFound, out
	}
	if m.paused {
		return OutcomeOK, out
	}
	return OutcomeOK, m.emit(&Record{Type: RecordPaused, At: m.decisionTime(now)}, out)
}

// Resume restarts admission. Idempotent.
func (m *Machine) Resume(now int64, out []Record) (Outcome, []Record) {
	if !m.defined {
		return OutcomeNotFound, out
	}
	if !m.paused {
		return OutcomeOK, out
	}
	return OutcomeOK, m.emit(&Record{Type: RecordResumed, At: m.decisionTime(now)}, out)
}

// Expire closes PENDING_PAYMENT reservations whose expire_at <= now, oldest
// first. It looks at no more than 4*max rows and closes at most max, so one
// step has bounded work; call it again while NextExpiry() <= now. The
// high-risk reservations, whose window is shorter, have a walk of their own
// (expireHighRisk), which gets what the main walk leaves of max once that
// walk has reached a reservation not yet due (or the last): every due
// reservation before it is closed by then, and the high-risk walk only
// finds later ones, so the due reservations close in seq order.
func (m *Machine) Expire(now int64, max int, out []Record) []Record {
	at := m.decisionTime(now)
	out, closed, reached := m.expireInOrder(at, max, out)
	if reached && closed < max && len(m.highRisk) > 0 {
		out, _ = m.expireHighRisk(at, max-closed, out)
	}
	return out
}

// expireInOrder is Expire's walk over every row in seq order. reached
// reports that it stopped at a PENDING_PAYMENT reservation not yet due or
// at the end of the table, not at a bound.
func (m *Machine) expireInOrder(at int64, max int, out []Record) (_ []Record, closed int, reached bool) {
	looked := 0
	for closed < max && looked < 4*max && m.expireCursor <= m.table.count {
		seq := m.expireCursor
		r := m.table.get(seq)
		looked++
		if r.state == StatePendingPayment {
			if m.table.expireAt(seq) > at {
				// Nothing later is due but reservations of a shorter
				// window: normal ones have expire_at monotonic in seq,
				// and a high-risk one not due means no later one is.
				return out, closed, true
			}
			out = m.closeExpired(at, seq, out)
			closed++
		}
		m.expireCursor++
	}
	return out, closed, m.expireCursor > m.table.count
}

// NextExpiry returns the expire_at (ms) of the oldest reservation that may
// still be PENDING_PAYMENT, and false when there is none. It looks at no
// more than 4096 rows; past that it returns 0, true: call Expire, which
// advances past settled rows.
func (m *Machine) NextExpiry() (int64, bool) {
	next, ok := m.nextExpiryInOrder()
	if len(m.highRisk) > 0 {
		if r, rok := m.nextHighRiskExpiry(); rok && (!ok || r < next) {
			return r, true
		}
	}
	return next, ok
}

// nextExpiryInOrder is NextExpiry for the walk in seq order.
func (m *Machine) nextExpiryInOrder() (int64, bool) {
	for c := m.expireCursor; c <= m.table.count; c++ {
		r := m.table.get(c)
		if r.state == StatePendingPayment {
			return m.table.expireAt(c), true
		}
		if c-m.expireCursor > 4096 {
			return 0, true // many settled rows: let Expire advance the cursor
		}
	}
	return 0, false
}

func (m *Machine) result(o Outcome, seq uint32) Result {
	return Result{Outcome: o, Reservation: m.view(seq, m.table.get(seq))}
}
