package sku

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"unsafe"
)

// StateFormatVersion is the first byte of an encoded state (the body of a
// snapshot file). It is part of the snapshot format: a change of the layout
// below gets a new number, and Restore refuses numbers it does not know.
//
// Layout of version 1 (varint: zig-zag, uvarint: unsigned LEB128, as in
// encoding/binary; str: uvarint length <= MaxIDLength, then the bytes):
//
//	u8 version | definition | bool defined | bool paused | varint last_at
//	uvarint tokens_handed_out
//	uvarint n, n × uvarint token                     released FIFO, oldest first
//	uvarint n, n × reservation                       in seq order from 1
//	uvarint n, n × rejection                         in log order
//	uvarint n, n × refund                            in log order
//
//	definition  = str campaign, str sku, varint start_at, varint end_at,
//	              varint payment_window_ms, uvarint sale_limit, bool release_on_close,
//	              16 bytes id_key
//	reservation = str request_id, str user_id,
//	              varint created_at - previous row's created_at (0 before the first),
//	              varint expire_at - created_at, uvarint token, uvarint version,
//	              u8 state, u8 flags, u8 has_extra,
//	              [str payment_id, varint amount, varint paid_at, varint closed_at,
//	               uvarint n, n × (str payment_id, varint amount)]   if has_extra
//	rejection   = str request_id, str user_id, u8 outcome, uvarint 0 (a reserved field, always 0)
//	refund      = uvarint seq, str payment_id, varint amount, varint at
//
// then optional trailing sections, each a u8 tag and its body, in tag order
// (a state without them is what older versions wrote):
//
//	tag 1: entry passes, written when the definition sets an entry-pass
//	       field (hasPassFields) or a reservation has a holder:
//	       definition's pass fields (as DEFINE's trailing field),
//	       uvarint n, n × (uvarint seq - previous seq, holder)   in seq order
//	holder      = u8 tier, u8 risk, u8 subject flags, 8 bytes per set flag
//	tag 2: a lottery SKU's entries and draw (lottery_codec.go), written
//	       for a lottery SKU only
//	tag 3: a celled SKU's cell, written for a celled SKU only:
//	       str cell, uvarint cellmap_version, uvarint epoch
//	       uvarint n, n × allocation                 GRANTs in log order
//	       uvarint n, n × allocation                 RETURNs in log order
//	       ranges                                    the unsold queue, in order
//	allocation  = uvarint seq, uvarint epoch, ranges
//	ranges      = uvarint n, n × (uvarint first, uvarint last - first)
//	tag 4: a lottery draw's beacon signature (lottery_codec.go), written
//	       when the draw recorded one: str signature
//	tag 6: a lottery that ended at end_at (lottery_codec.go), written once
//	       LOTTERY_ENDED is recorded: varint ended_at
//	tag 7: a lottery's entries whose pass carried a risk level or subject
//	       keys (lottery_codec.go), written when there is one:
//	       uvarint n, n × (uvarint entry_seq - previous entry_seq,
//	       u8 risk, u8 subject flags, 8 bytes per set flag)
//	tag 5: purchase, written for a campaign whose purchase_limit is
//	       "campaign" only, always last (after tag 3 for a celled SKU, after
//	       tags 2, 4, 6 and 7 for a lottery SKU):
//	       u8 purchase_limit (1)
//
// The sections are written in the order above (1, 2, 3, 4, 6, 7, 5) and only
// when used; the decoder accepts any subset of them in that order and
// refuses another order, a repeated tag or an unknown one. docs/formats.md
// states the same layout for readers of the files. For a celled SKU tokens_handed_out is the
// highest token id ever handed out (the token slots have holes for ids the
// cell never owned).
//
// Token slots, counters, the indexes and the expiry cursor are derived from
// these and rebuilt by Restore, which checks them as it goes.
const StateFormatVersion = 1

// stateSectionPasses tags the state's trailing section of entry passes.
const stateSectionPasses = 1

// ErrBadState is wrapped by Restore and DecodeState for bytes that are not
// a valid encoded state.
var ErrBadState = errors.New("malformed state")

// stateFlushSize is the encoder's buffer: it writes to w in pieces of about
// this many bytes. The buffer starts at stateFirstBuffer and grows to it as
// the state needs: a small state (the simulator hashes one after every
// input) costs no 64 KiB allocation.
const (
	stateFlushSize   = 64 << 10
	stateFirstBuffer = 4 << 10
)

// Encode writes the frozen state to w in the layout of StateFormatVersion
// and returns the number of bytes written. It only reads f, so it may run
// on any goroutine while the Machine goes on.
func (f *Frozen) Encode(w io.Writer) (int64, error) {
	e := stateEncoder{w: w, b: make([]byte, 0, stateFirstBuffer)}
	b := append(e.b, StateFormatVersion)
	b = appendDefinition(b, &f.def)
	b = appendBool(b, f.defined)
	b = appendBool(b, f.paused)
	b = binary.AppendVarint(b, f.lastAt)
	b = binary.AppendUvarint(b, uint64(f.handedOut))
	b = binary.AppendUvarint(b, uint64(len(f.released)))
	e.b = b
	for _, t := range f.released {
		e.b = binary.AppendUvarint(e.b, uint64(t))
		e.maybeFlush()
	}
	e.b = binary.AppendUvarint(e.b, uint64(f.table.count))
	var prevCreated int64
	for seq := uint32(1); seq <= f.table.count; seq++ {
		e.b = appendRow(e.b, &f.table, seq, prevCreated)
		prevCreated = f.table.createdAt(seq)
		e.maybeFlush()
	}
	e.b = binary.AppendUvarint(e.b, uint64(f.rejections.count))
	for i := uint32(1); i <= f.rejections.count; i++ {
		rj := f.rejections.get(i)
		b := appendString(e.b, rj.requestID)
		b = appendString(b, rj.userID)
		b = append(b, byte(rj.outcome))
		e.b = binary.AppendUvarint(b, 0)
		e.maybeFlush()
	}
	e.b = binary.AppendUvarint(e.b, uint64(len(f.refunds)))
	for _, rf := range f.refunds {
		b := binary.AppendUvarint(e.b, uint64(rf.ReservationSeq))
		b = appendString(b, rf.PaymentID)
		b = binary.AppendVarint(b, rf.Amount)
		e.b = binary.AppendVarint(b, rf.At)
		e.maybeFlush()
	}
	e.encodePasses(f)
	e.encodeLottery(f)
	e.encodeCell(f)
	e.encodeBeaconSignature(f)
	e.encodeEnded(f)
	e.encodeEntryPasses(f)
	e.encodePurchase(f)
	e.flush()
	return e.n, e.err
}

// encodePasses appends f's passes section (tag 1), if the definition sets
// an entry-pass field or a reservation has a holder.
func (e *stateEncoder) encodePasses(f *Frozen) {
	if !f.def.hasPassFields() && len(f.holders.rows) == 0 {
		return
	}
	e.b = append(e.b, stateSectionPasses)
	e.b = appendPassFields(e.b, &f.def)
	e.b = binary.AppendUvarint(e.b, uint64(len(f.holders.rows)))
	var prev uint32
	for i := range f.holders.rows {
		row := &f.holders.rows[i]
		e.b = binary.AppendUvarint(e.b, uint64(row.seq-prev))
		e.b = appendHolder(e.b, &row.h)
		prev = row.seq
		e.maybeFlush()
	}
}

func appendDefinition(b []byte, d *Definition) []byte {
	b = appendString(b, d.CampaignID)
	b = appendString(b, d.SKUID)
	b = binary.AppendVarint(b, d.StartAt)
	b = binary.AppendVarint(b, d.EndAt)
	b = binary.AppendVarint(b, d.PaymentWindowMs)
	b = binary.AppendUvarint(b, uint64(d.SaleLimit))
	b = appendBool(b, d.ReleaseOnClose)
	return append(b, d.IDKey[:]...)
}

func appendRow(b []byte, t *table, seq uint32, prevCreated int64) []byte {
	r := t.get(seq)
	created := t.createdAt(seq)
	b = appendString(b, t.requestID(seq))
	b = appendString(b, t.userID(seq))
	b = binary.AppendVarint(b, created-prevCreated)
	b = binary.AppendVarint(b, t.expireAt(seq)-created)
	b = binary.AppendUvarint(b, uint64(r.token))
	b = binary.AppendUvarint(b, uint64(t.version(r)))
	b = append(b, byte(r.state), r.flags&flagsKnown)
	x := t.extra(r)
	if x == nil {
		return append(b, 0)
	}
	b = append(b, 1)
	b = appendString(b, x.paymentID)
	b = binary.AppendVarint(b, x.amount)
	b = binary.AppendVarint(b, x.paidAt)
	b = binary.AppendVarint(b, x.closedAt)
	b = binary.AppendUvarint(b, uint64(len(x.refundPayments)))
	for i, p := range x.refundPayments {
		b = appendString(b, p)
		b = binary.AppendVarint(b, x.refundAmounts[i])
	}
	return b
}

// stateEncoder buffers the encoding and remembers the first write error.
type stateEncoder struct {
	w   io.Writer
	b   []byte
	n   int64
	err error
}

func (e *stateEncoder) maybeFlush() {
	if len(e.b) >= stateFlushSize {
		e.flush()
	}
}

func (e *stateEncoder) flush() {
	if e.err == nil && len(e.b) > 0 {
		n, err := e.w.Write(e.b)
		e.n += int64(n)
		e.err = err
	}
	e.b = e.b[:0]
}

// DecodeState rebuilds a Machine, with its derived state, from an encoded
// state (Frozen.Encode): DecodeState(Encode(m.Freeze())).Hash() == m.Hash()
// at the freeze. It never panics and never trusts a count
// before checking it against the bytes left; anything that is not a state
// Encode could have written (bad layout, trailing bytes, a token held twice,
// a duplicate request_id, counters that do not add up) wraps ErrBadState.
// Strings are copied out of b.
func DecodeState(b []byte) (*Machine, error) {
	s := stateDecoder{decoder: decoder{b: b}, m: New()}
	s.decode()
	if s.err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadState, s.err)
	}
	return s.m, nil
}

// Smallest encodings in bytes, to bound counts read from the input.
const (
	minRowSize       = 11 // two one-byte ids, 6 one-byte fields, state, flags, has_extra
	minRejectionSize = 6
	minRefundSize    = 5
)

type stateDecoder struct {
	decoder
	m *Machine
	// held marks the tokens bound to a row or listed as released.
	held []uint64
	// shortRows counts the rows with the high-risk window whose holder
	// the passes section has not shown yet.
	shortRows int
	// shortWindow is the window of the rows with the high-risk window.
	shortWindow int64
}

func (s *stateDecoder) fail(format string, args ...any) {
	if s.err == nil {
		s.err = fmt.Errorf(format, args...)
	}
}

// count reads a count of items of at least min bytes each.
func (s *stateDecoder) count(what string, min int) uint32 {
	n := s.uvarint()
	if s.err == nil && (n > uint64(len(s.b)/min) || n > MaxReservations) {
		s.fail("%s count %d exceeds the %d bytes left", what, n, len(s.b))
		return 0
	}
	return uint32(n)
}

// mark records token as taken once; false if it already was.
func (s *stateDecoder) mark(token uint32) bool {
	w, bit := (token-1)/64, uint64(1)<<((token-1)%64)
	if s.held[w]&bit != 0 {
		return false
	}
	s.held[w] |= bit
	return true
}

func (s *stateDecoder) decode() {
	m := s.m
	if v := s.byte(); s.err == nil && v != StateFormatVersion {
		s.fail("state format version %d, want %d", v, StateFormatVersion)
	}
	d := &m.def
	d.CampaignID = string(s.bytes())
	d.SKUID = string(s.bytes())
	d.StartAt, d.EndAt, d.PaymentWindowMs = s.varint(), s.varint(), s.varint()
	d.SaleLimit = s.uint32()
	d.ReleaseOnClose = s.bool()
	d.IDKey = s.key()
	m.definitionChanged()
	m.defined, m.paused, m.lastAt = s.bool(), s.bool(), s.varint()
	if s.err != nil {
		return
	}
	if m.defined {
		if err := d.Validate(); err != nil {
			s.fail("%v", err)
			return
		}
	} else if *d != (Definition{}) || m.paused {
		s.fail("an undefined SKU with a definition or a pause")
		return
	}
	if m.defined {
		m.setDefinition(*d)
	}
	handedOut := s.uint32()
	if s.err == nil && handedOut > d.SaleLimit {
		s.fail("%d tokens handed out beyond sale_limit %d", handedOut, d.SaleLimit)
	}
	released := s.count("released token", 1)
	if s.err != nil {
		return
	}
	s.held = make([]uint64, (uint64(handedOut)+63)/64)
	m.pool.slots = make([]uint32, handedOut)
	m.pool.released = make([]uint32, released)
	for i := range m.pool.released {
		t := s.uint32()
		if s.err == nil && (t == 0 || t > handedOut || !s.mark(t)) {
			s.fail("released token %d is out of range or listed twice", t)
		}
		m.pool.released[i] = t
	}
	s.rows(handedOut)
	s.rejectionsAndRefunds()
	if s.err == nil && len(s.b) != 0 && s.b[0] == stateSectionPasses {
		s.passes()
	}
	if s.err == nil && s.shortRows != 0 {
		s.fail("%d reservations with a payment window of %d ms have no holder that gets it", s.shortRows, s.shortWindow)
	}
	s.decodeLottery()
	if s.err == nil && len(s.b) != 0 && s.b[0] == stateSectionCell {
		s.cellSection(released)
		s.lastSection()
		return
	}
	s.decodeBeaconSignature()
	s.decodeEnded()
	s.decodeEntryPasses()
	s.lastSection()
	if s.err == nil {
		if held := m.pool.reserved + m.pool.confirmed; uint64(held)+uint64(released) != uint64(handedOut) {
			s.fail("%d tokens held and %d released, but %d handed out", held, released, handedOut)
		}
	}
}

// rows decodes the reservations and rebuilds the token slots, counters and
// indexes from them.
func (s *stateDecoder) rows(handedOut uint32) {
	m := s.m
	n := s.count("reservation", minRowSize)
	if s.err != nil {
		return
	}
	if n > 0 && !m.defined {
		s.fail("reservations on an undefined SKU")
		return
	}
	var created int64
	for seq := uint32(1); seq <= n && s.err == nil; seq++ {
		var r reservation
		// Views of the input, not copies: the table copies them into its
		// arena, and nothing else keeps them.
		requestID, userID := inputView(s.bytes()), inputView(s.bytes())
		created += s.varint()
		window := s.varint()
		r.token = s.uint32()
		version := s.uvarint()
		r.state, r.flags = State(s.byte()), s.byte()
		var extra *reservationExtra
		if s.bool() {
			extra = s.extra()
		}
		if s.err != nil {
			return
		}
		if msg := checkRow(&r, requestID, userID, extra, version, handedOut); msg != "" {
			s.fail("reservation %d: %s", seq, msg)
			return
		}
		// The window and the version are derived from the row; the
		// stored ones must be what the row derives.
		// Any other window than payment_window must be the high-risk one,
		// which the passes section gives: checked there, with the holder.
		if window != m.table.windows[0] {
			if s.shortRows == 0 {
				s.shortWindow = window
			} else if window != s.shortWindow {
				s.fail("reservation %d: expire_at does not follow a payment window", seq)
				return
			}
			r.flags |= flagShortWindow
			s.shortRows++
		}
		if base := rowVersionBase(&r, extra); version == base+1 && r.state == StateClosed && !r.holdsToken() {
			r.flags |= flagReleasedApart
		} else if version != base {
			s.fail("reservation %d: version %d does not count its changes", seq, version)
			return
		}
		if extra != nil {
			m.table.extras = append(m.table.extras, extra)
			r.extra = uint32(len(m.table.extras))
		}
		m.table.add(r, requestID, userID, created)
		m.states[r.state]++
		if m.expireCursor == seq && r.state != StatePendingPayment {
			m.expireCursor++ // the first row that may still expire
		}
		if !r.holdsToken() {
			continue
		}
		if !s.mark(r.token) {
			s.fail("reservation %d: token %d is held twice or also released", seq, r.token)
			return
		}
		slot := seq
		switch r.state {
		case StatePaid:
			slot |= confirmedBit
			m.pool.confirmed++
		case StateClosed:
			m.heldClosed++
			m.pool.reserved++
		default:
			m.pool.reserved++
		}
		m.pool.slots[r.token-1] = slot
	}
	if s.err == nil {
		s.indexRows()
	}
}

// indexRows builds the indexes of the decoded rows, sized for them at
// once, walking the table in seq order: no growth moves, and each row's
// key read in turn rather than again at random by a move.
func (s *stateDecoder) indexRows() {
	m := s.m
	m.byRequest.reserve(int(m.table.count))
	m.live.reserve(int(m.states[StatePendingPayment] + m.states[StatePaid]))
	for seq := uint32(1); seq <= m.table.count; seq++ {
		if requestID := m.table.requestID(seq); !m.byRequest.insertNew(requestID, seq) {
			s.fail("reservation %d: request_id %q used twice", seq, requestID)
			return
		}
		if m.table.get(seq).state == StateClosed {
			continue
		}
		if userID := m.table.userID(seq); !m.live.insertNew(userID, seq) {
			s.fail("reservation %d: user %q has two live purchases", seq, userID)
			return
		}
	}
}

// inputView returns b's bytes as a string without copying them; b must
// not change while the string is used.
func inputView(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// checkRow returns why a decoded row is impossible, or "".
func checkRow(r *reservation, requestID, userID string, x *reservationExtra, version uint64, handedOut uint32) string {
	switch {
	case !ValidID(requestID) || !ValidID(userID):
		return "invalid request or user id"
	case r.state < StatePendingPayment || r.state > StateClosed:
		return fmt.Sprintf("state %d", r.state)
	case r.flags&^flagsKnown != 0 || r.reason() > ReasonCancelled:
		return fmt.Sprintf("flags %#x", r.flags)
	case (r.state == StateClosed) != (r.reason() != ReasonNone):
		return "close reason does not match the state"
	case r.state != StateClosed && !r.holdsToken():
		return fmt.Sprintf("%s without a token", r.state)
	case r.token == 0 || r.token > handedOut:
		return fmt.Sprintf("token %d never handed out", r.token)
	case version == 0 || version > math.MaxUint32:
		return fmt.Sprintf("version %d", version)
	case r.state == StatePaid && (x == nil || !ValidID(x.paymentID)):
		return "paid without a payment"
	case r.refundRequired() != (x != nil && len(x.refundPayments) > 0):
		return "refund flag does not match the refund payments"
	case r.state == StatePendingPayment && r.refundRequired():
		// applyRefund: a refund is of a payment that came after the close,
		// or of another payment_id on a PAID reservation.
		return "PENDING_PAYMENT with a refund: nothing to refund"
	case r.state == StatePaid && slices.Contains(x.refundPayments, x.paymentID):
		return fmt.Sprintf("payment %q paid the reservation and is listed for refund", x.paymentID)
	}
	return ""
}

// extra decodes a row's payment and close details.
func (s *stateDecoder) extra() *reservationExtra {
	x := &reservationExtra{}
	x.paymentID = string(s.bytes())
	x.amount, x.paidAt, x.closedAt = s.varint(), s.varint(), s.varint()
	n := s.count("refund payment", 2)
	if n > 0 {
		x.refundPayments = make([]string, n)
		x.refundAmounts = make([]int64, n)
	}
	for i := uint32(0); i < n && s.err == nil; i++ {
		x.refundPayments[i] = string(s.bytes())
		x.refundAmounts[i] = s.varint()
		if s.err == nil && !ValidID(x.refundPayments[i]) {
			s.fail("invalid refund payment id")
		}
	}
	return x
}

func (s *stateDecoder) rejectionsAndRefunds() {
	m := s.m
	n := s.count("rejection", minRejectionSize)
	for i := uint32(0); i < n && s.err == nil; i++ {
		var rj rejection
		rj.requestID, rj.userID = s.stringPair()
		rj.outcome = Outcome(s.byte())
		reserved := s.uint32()
		if s.err != nil {
			return
		}
		switch {
		case !ValidID(rj.requestID) || !ValidID(rj.userID):
			s.fail("rejection %d: invalid request or user id", i+1)
		case rj.outcome == OutcomeSoldOut && reserved == 0:
		default:
			s.fail("rejection %d: outcome %s for reservation %d", i+1, rj.outcome, reserved)
		}
		if _, ok := m.byRequest.get(rj.requestID); ok {
			s.fail("rejection %d: request_id %q was accepted", i+1, rj.requestID)
		}
		if _, ok := m.rejected[rj.requestID]; ok {
			s.fail("rejection %d: request_id %q rejected twice", i+1, rj.requestID)
		}
		if s.err == nil {
			m.addRejection(rj)
		}
	}
	n = s.count("refund", minRefundSize)
	if s.err != nil {
		return
	}
	want := 0
	for seq := uint32(1); seq <= m.table.count; seq++ {
		if x := m.table.extra(m.table.get(seq)); x != nil {
			want += len(x.refundPayments)
		}
	}
	if int(n) != want {
		s.fail("%d refunds listed, the reservations hold %d", n, want)
		return
	}
	m.refunds = make([]Refund, n)
	if n > 0 {
		m.refundIndex = make(refundIndex, n)
	}
	for i := range m.refunds {
		rf := &m.refunds[i]
		rf.ReservationSeq = s.uint32()
		rf.PaymentID = string(s.bytes())
		rf.Amount, rf.At = s.varint(), s.varint()
		if s.err != nil {
			return
		}
		if m.table.get(rf.ReservationSeq) == nil || !ValidID(rf.PaymentID) {
			s.fail("refund %d: reservation %d, payment %q", i+1, rf.ReservationSeq, rf.PaymentID)
			return
		}
		if !m.indexRefund(*rf, uint32(i+1)) {
			s.fail("refund %d: payment %q listed twice for reservation %d", i+1, rf.PaymentID, rf.ReservationSeq)
			return
		}
	}
	s.matchRefunds()
}

// matchRefunds checks that the refund list (indexed) holds the rows'
// refund payments and nothing else: each row's payments are listed for
// that row, with the same amount, in the same order. With as many listed
// as the rows hold, each listed refund is then some row's, once, and the
// index, which pay decides with, agrees with the rows, which are encoded.
func (s *stateDecoder) matchRefunds() {
	m := s.m
	for seq := uint32(1); seq <= m.table.count; seq++ {
		x := m.table.extra(m.table.get(seq))
		if x == nil {
			continue
		}
		var last uint32
		for j, p := range x.refundPayments {
			i, ok := m.refundIndex[refundKey{paymentID: p, seq: seq}]
			switch {
			case !ok:
				s.fail("reservation %d: refund payment %q is not listed", seq, p)
				return
			case m.refunds[i-1].Amount != x.refundAmounts[j]:
				s.fail("reservation %d: refund payment %q of %d is listed for %d", seq, p, x.refundAmounts[j], m.refunds[i-1].Amount)
				return
			case i <= last:
				s.fail("reservation %d: refund payment %q is recorded twice or out of log order", seq, p)
				return
			}
			last = i
		}
	}
}

// Smallest encoding of a holder row: a one-byte seq delta and a holder
// without keys.
const minHolderRowSize = 4

// passes decodes the entry-pass section (tag 1) and rebuilds the unpaid
// counts from it.
func (s *stateDecoder) passes() {
	m := s.m
	if tag := s.byte(); s.err == nil && tag != stateSectionPasses {
		s.fail("unknown trailing section %d", tag)
		return
	}
	var d Definition = m.def
	s.passFields(&d)
	if s.err != nil {
		return
	}
	if m.defined {
		if err := d.Validate(); err != nil {
			s.fail("%v", err)
			return
		}
		m.setDefinition(d)
	} else if d.hasPassFields() {
		s.fail("an undefined SKU with a definition")
		return
	}
	n := s.count("holder", minHolderRowSize)
	if s.err == nil && n == 0 && !d.hasPassFields() {
		s.fail("a passes section with no pass field and no holder") // never written: not canonical
		return
	}
	var seq uint32
	for i := uint32(0); i < n && s.err == nil; i++ {
		delta := s.uint32()
		h := s.holder()
		if s.err != nil {
			return
		}
		if delta == 0 || uint64(seq)+uint64(delta) > uint64(m.table.count) {
			s.fail("holder %d: reservation %d+%d out of order or unknown", i+1, seq, delta)
			return
		}
		seq += delta
		r := m.table.get(seq)
		if h == (Holder{}) {
			s.fail("holder %d: empty", i+1)
			return
		}
		if m.table.expireAt(seq)-m.table.createdAt(seq) != d.PaymentWindowFor(h) {
			s.fail("reservation %d: expire_at does not follow its payment window", seq)
			return
		}
		if r.flags&flagShortWindow != 0 {
			if s.shortWindow != m.table.windows[1] {
				s.fail("reservation %d: expire_at does not follow its payment window", seq)
				return
			}
			s.shortRows--
		}
		m.holders.add(seq, h)
		if r.state == StatePendingPayment {
			m.countUnpaid(&h)
			if m.shortWindow(&h) {
				m.queueHighRisk(seq)
			}
		}
	}
}
