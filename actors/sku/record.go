package sku

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// RecordType names a state change. The numbers are the wal frame's type byte
// and are frozen: never reuse one.
type RecordType uint8

// Record types.
const (
	RecordDefine         RecordType = 1 // first record of a SKU log, and every allowed redefinition
	RecordReserved       RecordType = 2 // a token bound to a new PENDING_PAYMENT reservation
	RecordRejected       RecordType = 3 // a reserve durably refused: SOLD_OUT
	RecordPaid           RecordType = 4 // PENDING_PAYMENT -> PAID, token RESERVED -> CONFIRMED
	RecordClosed         RecordType = 5 // PENDING_PAYMENT -> CLOSED, token released if Release
	RecordRefundRequired RecordType = 6 // a payment for a closed reservation, to be refunded
	RecordReleased       RecordType = 7 // the token of a CLOSED reservation back to the pool
	RecordPaused         RecordType = 8 // admission stops; pay and close go on
	RecordResumed        RecordType = 9 // admission resumes
	// The lottery records (lottery.go, lottery_record.go).
	RecordLotteryCommitted RecordType = 10 // the lottery's rules, server seed and pseudonym key
	RecordEntered          RecordType = 11 // an entry
	RecordEntriesClosed    RecordType = 12 // the entry count and entries_root
	RecordDrawStarted      RecordType = 13 // the beacon round and randomness of the draw
	RecordWon              RecordType = 14 // a reservation for a winner or a promoted waitlisted entry
	RecordWaitlisted       RecordType = 15 // a chunk of the waitlist, in rank order
	RecordDrawDone         RecordType = 16 // the draw's winner count and result roots
	// The records of a celled SKU (cells.go, grants.go).
	RecordGrant  RecordType = 17 // an allocation's token ranges join the pool
	RecordReturn RecordType = 18 // available tokens leave the pool, before the ledger credit
	RecordEpoch  RecordType = 19 // the epoch the process holds in the ledger

	RecordLotteryEnded RecordType = 20 // a lottery ends at end_at: the entries that could still win lose
)

func (t RecordType) String() string {
	names := [...]string{"", "DEFINE", "RESERVED", "REJECTED", "PAID", "CLOSED", "REFUND_REQUIRED", "RELEASED", "PAUSED", "RESUMED",
		"LOTTERY_COMMITTED", "ENTERED", "ENTRIES_CLOSED", "DRAW_STARTED", "WON", "WAITLISTED", "DRAW_DONE",
		"GRANT", "RETURN", "EPOCH", "LOTTERY_ENDED"}
	if int(t) < len(names) && t != 0 {
		return names[t]
	}
	return fmt.Sprintf("RecordType(%d)", uint8(t))
}

// Record is one state change, with the time it was decided. Replaying the
// same records from an empty Machine gives the same state: Apply never reads
// a clock. Which fields are set depends on Type (see the constants).
type Record struct {
	Type      RecordType
	At        int64  // ms, the decision time (monotonic per SKU)
	Seq       uint32 // reservation sequence number, 1-based
	Token     uint32 // RESERVED: the token bound
	ExpireAt  int64  // RESERVED: ms
	RequestID string // RESERVED, REJECTED
	UserID    string // RESERVED, REJECTED
	PaymentID string // PAID, REFUND_REQUIRED
	Amount    int64  // PAID, REFUND_REQUIRED: minor units
	Outcome   Outcome
	Reason    CloseReason
	Release   bool           // CLOSED: the token goes back to the pool
	Def       Definition     // DEFINE; LOTTERY_COMMITTED: Def.Lottery only
	Lot       *LotteryFields // the lottery records but LOTTERY_COMMITTED
	Cell      *Allocation    // GRANT, RETURN: the allocation or return; EPOCH: Epoch only
	// Holder is what the entry pass of a RESERVED's reserve or an
	// ENTERED's entry said (tier, risk, subject keys); zero without a pass.
	// RESERVED writes it as an optional trailing field; ENTERED writes the
	// tier always and the rest as an optional trailing group.
	Holder Holder
}

// ErrBadRecord is wrapped by DecodeRecord for a payload that does not parse.
var ErrBadRecord = errors.New("malformed record")

// AppendPayload appends the record's fields (not its type) to dst. The layout
// per type is a fixed sequence of varints and length-prefixed strings.
//
// Optional trailing groups, written only when needed, so a record without
// them is byte for byte what older versions wrote, and an older record
// decodes with them zero:
//
//	DEFINE    ... id_key | passes group | cell group
//	  passes group (entry passes): bool entry_pass.required, varint
//	          entry_pass.lead_ms, varint entry_pass.ttl_ms, uvarint
//	          max_unpaid_per_subject, varint payment_window_high_risk_ms
//	  cell group (a celled SKU): str cell (not empty unless a purchase group
//	          follows), uvarint cellmap_version
//	  purchase group (campaign scope): u8 purchase_limit (1, campaign: the group
//	          is written only for campaign scope)
//	RESERVED  ... user_id | u8 tier, u8 risk, u8 subject flags,
//	          8 bytes per set flag (bit order)
//	ENTERED   ... user_id | u8 risk, u8 subject flags, 8 bytes per set
//	          flag (lottery_record.go)
//
// DEFINE's groups are positional: a later group is written only after the
// earlier ones, so a celled definition writes the passes group even when
// its fields are all zero. The decoder reads the passes group when bytes
// are left after id_key and the cell group when bytes are left after that;
// the passes group has a fixed field sequence, so the two never overlap.
// docs/formats.md states every record's layout for readers of the files.
func (r *Record) AppendPayload(dst []byte) []byte {
	dst = binary.AppendVarint(dst, r.At)
	switch r.Type {
	case RecordDefine:
		d := &r.Def
		dst = appendString(dst, d.CampaignID)
		dst = appendString(dst, d.SKUID)
		dst = binary.AppendVarint(dst, d.StartAt)
		dst = binary.AppendVarint(dst, d.EndAt)
		dst = binary.AppendVarint(dst, d.PaymentWindowMs)
		dst = binary.AppendUvarint(dst, uint64(d.SaleLimit))
		dst = appendBool(dst, d.ReleaseOnClose)
		dst = append(dst, d.IDKey[:]...)
		scoped := d.PurchaseLimit != PurchaseLimitSKU
		if d.hasPassFields() || d.Cell != "" || scoped {
			dst = appendPassFields(dst, d)
		}
		if d.Cell != "" || scoped {
			dst = appendCellFields(dst, d)
		}
		if scoped {
			dst = append(dst, byte(d.PurchaseLimit))
		}
	case RecordReserved:
		dst = binary.AppendUvarint(dst, uint64(r.Seq))
		dst = binary.AppendUvarint(dst, uint64(r.Token))
		dst = binary.AppendVarint(dst, r.ExpireAt)
		dst = appendString(dst, r.RequestID)
		dst = appendString(dst, r.UserID)
		if !r.Holder.empty() { // ReserveWith's, so valid
			dst = appendHolder(dst, &r.Holder)
		}
	case RecordRejected:
		dst = append(dst, byte(r.Outcome))
		dst = binary.AppendUvarint(dst, uint64(r.Seq))
		dst = appendString(dst, r.RequestID)
		dst = appendString(dst, r.UserID)
	case RecordPaid, RecordRefundRequired:
		dst = binary.AppendUvarint(dst, uint64(r.Seq))
		dst = appendString(dst, r.PaymentID)
		dst = binary.AppendVarint(dst, r.Amount)
	case RecordClosed:
		dst = binary.AppendUvarint(dst, uint64(r.Seq))
		dst = append(dst, byte(r.Reason))
		dst = appendBool(dst, r.Release)
	case RecordReleased:
		dst = binary.AppendUvarint(dst, uint64(r.Seq))
	case RecordGrant, RecordReturn:
		dst = appendAllocation(dst, r.Cell)
	case RecordEpoch:
		dst = binary.AppendUvarint(dst, r.Cell.Epoch)
	default:
		if r.Type.isLottery() {
			dst = r.appendLotteryPayload(dst)
		}
	}
	return dst
}

// DecodeRecord parses a payload made by AppendPayload. It never panics; a
// payload that does not parse, or has bytes left over, wraps ErrBadRecord.
// Strings are copied (RequestID and UserID share one allocation).
func DecodeRecord(typ RecordType, payload []byte) (Record, error) {
	d := decoder{b: payload}
	r := Record{Type: typ, At: d.varint()}
	switch typ {
	case RecordDefine:
		r.Def.CampaignID = string(d.bytes())
		r.Def.SKUID = string(d.bytes())
		r.Def.StartAt = d.varint()
		r.Def.EndAt = d.varint()
		r.Def.PaymentWindowMs = d.varint()
		r.Def.SaleLimit = d.uint32()
		r.Def.ReleaseOnClose = d.bool()
		r.Def.IDKey = d.key()
		if d.err == nil && len(d.b) > 0 {
			// Written when a field is set or a later group follows: an
			// all-zero group alone is not canonical.
			if d.passFields(&r.Def); d.err == nil && !r.Def.hasPassFields() && len(d.b) == 0 {
				d.fail(errors.New("an all-zero pass group with no group after it"))
			}
		}
		if d.err == nil && len(d.b) > 0 {
			d.cellFields(&r.Def)
		}
		if d.err == nil && len(d.b) > 0 {
			d.purchaseLimit(&r.Def)
		}
	case RecordReserved:
		r.Seq = d.uint32()
		r.Token = d.uint32()
		r.ExpireAt = d.varint()
		r.RequestID, r.UserID = d.stringPair()
		if d.err == nil && len(d.b) > 0 {
			// Written only for a reserve with a pass: an empty holder is
			// not canonical (it would decode again as none).
			if r.Holder = d.holder(); d.err == nil && r.Holder.empty() {
				d.fail(errors.New("an empty holder"))
			}
		}
	case RecordRejected:
		r.Outcome = Outcome(d.byte())
		r.Seq = d.uint32()
		r.RequestID, r.UserID = d.stringPair()
	case RecordPaid, RecordRefundRequired:
		r.Seq = d.uint32()
		r.PaymentID = string(d.bytes())
		r.Amount = d.varint()
	case RecordClosed:
		r.Seq = d.uint32()
		r.Reason = CloseReason(d.byte())
		r.Release = d.bool()
	case RecordReleased:
		r.Seq = d.uint32()
	case RecordGrant, RecordReturn:
		r.Cell = d.allocation()
	case RecordEpoch:
		r.Cell = &Allocation{Epoch: d.uvarint()}
	case RecordPaused, RecordResumed:
	default:
		if typ.isLottery() {
			d.decodeLottery(&r)
			break
		}
		return Record{}, fmt.Errorf("%w: unknown type %d", ErrBadRecord, typ)
	}
	if d.err != nil {
		return Record{}, fmt.Errorf("%w: %s: %v", ErrBadRecord, typ, d.err)
	}
	if len(d.b) != 0 {
		return Record{}, fmt.Errorf("%w: %s: %d trailing bytes", ErrBadRecord, typ, len(d.b))
	}
	return r, nil
}

// appendAllocation appends uvarint seq, uvarint epoch, uvarint n and n
// token ranges (uvarint first, uvarint last-first).
func appendAllocation(dst []byte, a *Allocation) []byte {
	dst = binary.AppendUvarint(dst, a.Seq)
	dst = binary.AppendUvarint(dst, a.Epoch)
	return appendRanges(dst, a.Ranges)
}

func appendRanges(dst []byte, rs []TokenRange) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(rs)))
	for _, r := range rs {
		dst = binary.AppendUvarint(dst, uint64(r.First))
		dst = binary.AppendUvarint(dst, uint64(r.Last-r.First))
	}
	return dst
}

// appendPassFields appends the definition's entry-pass fields: DEFINE's
// passes group and the state's passes section.
func appendPassFields(dst []byte, d *Definition) []byte {
	dst = appendBool(dst, d.EntryPass.Required)
	dst = binary.AppendVarint(dst, d.EntryPass.LeadMs)
	dst = binary.AppendVarint(dst, d.EntryPass.TTLMs)
	dst = binary.AppendUvarint(dst, uint64(d.MaxUnpaidPerSubject))
	return binary.AppendVarint(dst, d.PaymentWindowHighRiskMs)
}

// passFields reads what appendPassFields wrote.
func (d *decoder) passFields(def *Definition) {
	def.EntryPass.Required = d.bool()
	def.EntryPass.LeadMs = d.varint()
	def.EntryPass.TTLMs = d.varint()
	def.MaxUnpaidPerSubject = d.uint32()
	def.PaymentWindowHighRiskMs = d.varint()
}

// appendCellFields appends DEFINE's cell group: the definition's cell and
// cell map version.
func appendCellFields(dst []byte, d *Definition) []byte {
	dst = appendString(dst, d.Cell)
	return binary.AppendUvarint(dst, d.CellMapVersion)
}

// cellFields reads what appendCellFields wrote; an empty cell is refused
// (it would be written without the group) unless a purchase group follows.
func (d *decoder) cellFields(def *Definition) {
	def.Cell = string(d.bytes())
	def.CellMapVersion = d.uvarint()
	if d.err == nil && def.Cell == "" && len(d.b) == 0 {
		d.fail(errors.New("an empty cell in the cell group"))
	}
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func appendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// decoder reads fields and remembers the first error.
type decoder struct {
	b   []byte
	err error
}

var (
	errShort    = errors.New("short payload")
	errOverlong = errors.New("a varint longer than its value needs")
)

// varintLen checks a varint of n bytes at the start of b (n as
// binary.Uvarint returns it): errShort for none, errOverlong for one that
// ends in a zero byte after others (0x81 0x00 is 1, written 0x01), which
// the encoder never writes, so a record or state has one encoding.
func varintLen(b []byte, n int) error {
	switch {
	case n <= 0:
		return errShort
	case n > 1 && b[n-1] == 0:
		return errOverlong
	}
	return nil
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if d.err = varintLen(d.b, n); d.err != nil {
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if d.err = varintLen(d.b, n); d.err != nil {
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uint32() uint32 {
	v := d.uvarint()
	if v > 1<<32-1 {
		d.err = errors.New("value out of range")
		return 0
	}
	return uint32(v)
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.err = errShort
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) key() (k [16]byte) {
	if d.err != nil {
		return k
	}
	if len(d.b) < len(k) {
		d.err = errShort
		return k
	}
	copy(k[:], d.b)
	d.b = d.b[len(k):]
	return k
}

func (d *decoder) bool() bool {
	switch d.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	if d.err == nil {
		d.err = errors.New("bad bool")
	}
	return false
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > MaxIDLength || n > uint64(len(d.b)) {
		d.err = errors.New("string length out of range")
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

// allocation reads what appendAllocation wrote.
func (d *decoder) allocation() *Allocation {
	a := &Allocation{Seq: d.uvarint(), Epoch: d.uvarint()}
	a.Ranges = d.ranges()
	return a
}

// ranges reads what appendRanges wrote; at most MaxRangesPerRecord, each
// checked to stay within uint32. Whether they fit a SKU is Apply's to say.
func (d *decoder) ranges() []TokenRange {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > MaxRangesPerRecord || n > uint64(len(d.b)/2) {
		d.err = errors.New("token range count out of range")
		return nil
	}
	rs := make([]TokenRange, n)
	for i := range rs {
		first := d.uint32()
		span := d.uint32()
		if d.err == nil && uint64(first)+uint64(span) > 1<<32-1 {
			d.err = errors.New("token range out of range")
		}
		rs[i] = TokenRange{First: first, Last: first + span}
	}
	return rs
}

// stringPair reads two strings into one allocation.
func (d *decoder) stringPair() (string, string) {
	a := d.bytes()
	b := d.bytes()
	if d.err != nil {
		return "", ""
	}
	return joinPair(a, b)
}

// joinPair copies a and b into one string allocation and returns the two
// halves: a reservation's request_id and user_id live side by side.
func joinPair(a, b []byte) (string, string) {
	var sb strings.Builder
	sb.Grow(len(a) + len(b))
	sb.Write(a)
	sb.Write(b)
	s := sb.String()
	return s[:len(a)], s[len(a):]
}
