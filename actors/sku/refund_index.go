package sku

import "fmt"

// refundKey names one payment recorded for refund: the reservation it was
// paid to and its payment_id.
type refundKey struct {
	paymentID string
	seq       uint32
}

// refundIndex maps each payment recorded for refund to its 1-based
// position in Machine.refunds. It is derived state, as Machine.rejected
// is: built as REFUND_REQUIRED records apply, rebuilt from the refund list
// when a state is decoded (and checked there against the rows), never
// encoded. A pay looks its payment_id up in O(1) however many refunds its
// reservation has: a payment system may send a reservation distinct
// payment_ids without bound (a gateway retrying with a new one each time),
// and a scan of the reservation's list on each pay made the SKU's actor,
// which every buyer of the SKU waits behind, slower with each. It costs one
// map entry per refund recorded (the key shares the payment_id's bytes),
// nothing for a SKU without refunds.
type refundIndex map[refundKey]uint32

// refundRecorded is the one owner of the rule "is paymentID recorded for
// refund on reservation seq, and with what amount": the pay command's
// PAYMENT_ID_REUSED and once-per-payment_id decisions, and the check of a
// REFUND_REQUIRED record, ask it.
func (m *Machine) refundRecorded(seq uint32, paymentID string) (amount int64, ok bool) {
	i, ok := m.refundIndex[refundKey{paymentID: paymentID, seq: seq}]
	if !ok {
		return 0, false
	}
	return m.refunds[i-1].Amount, true
}

// addRefund appends rf, whose payment must not be recorded yet for its
// reservation (applyRefund checked), to the refund list and indexes it.
func (m *Machine) addRefund(rf Refund) {
	m.refunds = append(m.refunds, rf)
	if !m.indexRefund(rf, uint32(len(m.refunds))) {
		panic(fmt.Sprintf("sku: payment %q recorded twice for refund on reservation %d", rf.PaymentID, rf.ReservationSeq))
	}
}

// indexRefund indexes rf at 1-based position i of the refund list; false
// if its payment was already indexed for its reservation.
func (m *Machine) indexRefund(rf Refund, i uint32) bool {
	k := refundKey{paymentID: rf.PaymentID, seq: rf.ReservationSeq}
	if m.refundIndex == nil {
		m.refundIndex = make(refundIndex)
	}
	if _, ok := m.refundIndex[k]; ok {
		return false
	}
	m.refundIndex[k] = i
	return true
}

// auditRefundIndex reports where the refund index disagrees with the
// refund list: each listed refund indexed at its position, nothing else.
func (m *Machine) auditRefundIndex(violation func(format string, args ...any)) {
	if len(m.refundIndex) != len(m.refunds) {
		violation("refund index has %d entries for %d refunds", len(m.refundIndex), len(m.refunds))
	}
	for i, rf := range m.refunds {
		if got := m.refundIndex[refundKey{paymentID: rf.PaymentID, seq: rf.ReservationSeq}]; got != uint32(i+1) {
			violation("refund %d (payment %q on reservation %d) is indexed at %d", i+1, rf.PaymentID, rf.ReservationSeq, got)
		}
	}
}
