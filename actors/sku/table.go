package sku

import (
	"cmp"
	"math"
	"slices"
)

// reservation is the in-memory row of one reservation: 20 bytes and no
// pointer, so the garbage collector never scans the table. What a row can
// derive it does not store:
//   - its request_id and user_id bytes sit side by side in the table's
//     arena, at ids bytes past its chunk's first position;
//   - created_at is created ms past its chunk's first created_at (a row
//     further than 2^32-2 ms from it keeps its time in table.far);
//   - expire_at is created_at plus the payment window, which a definition
//     never changes (flagShortWindow: the high-risk one);
//   - the version counts the changes: 1 + settled + released apart from its
//     close + refunds (rowVersion);
//   - the reservation id is formatted from the seq (idTagger).
//
// Payment and close details, which only settled reservations need, are in
// the table's extras.
//
// Rows are shared with frozen states (see Freeze): a row is changed only
// through table.mut, and an extra is never changed in place (editExtra
// installs a fresh one).
type reservation struct {
	ids     uint32 // arena position of request_id then user_id, past chunkBase.ids
	created uint32 // created_at - chunkBase.at in ms; createdFar: see table.far
	token   uint32
	extra   uint32 // 1 + index in table.extras; 0: none
	reqLen  uint8
	userLen uint8
	state   State
	flags   uint8 // reason in the low 2 bits, flagHoldsToken, flagRefund, flagShortWindow, flagReleasedApart
}

const (
	flagReasonMask = 0x03
	flagHoldsToken = 0x04
	flagRefund     = 0x08
	// flagsKnown are the flag bits of the state format; the state decoder
	// refuses others, and the encoder writes only these.
	flagsKnown = flagReasonMask | flagHoldsToken | flagRefund
	// flagShortWindow: expire_at follows the high-risk payment window.
	flagShortWindow = 0x10
	// flagReleasedApart: the token was released by a RELEASED record after
	// the close (one more version than a release with the close).
	flagReleasedApart = 0x20
)

// createdFar marks a row whose created_at is in table.far.
const createdFar = math.MaxUint32

func (r *reservation) reason() CloseReason { return CloseReason(r.flags & flagReasonMask) }
func (r *reservation) holdsToken() bool    { return r.flags&flagHoldsToken != 0 }
func (r *reservation) refundRequired() bool {
	return r.flags&flagRefund != 0
}

// reservationExtra holds what only paid or closed reservations need. It is
// immutable once installed in a row: a frozen state may be reading it. Its
// refund slices are append-only and shared by length with the extras that
// follow it (editExtra): a reader sees only the refunds up to its own
// length, which nothing writes again.
type reservationExtra struct {
	paymentID      string
	amount         int64
	paidAt         int64
	closedAt       int64
	refundPayments []string
	refundAmounts  []int64
}

// chunkShift sets the chunk size of the reservation table: 4096 rows of 20
// bytes. Chunks never move, so the table grows without copying and without
// the slack of a doubling slice.
const chunkShift = 12
const chunkSize = 1 << chunkShift

// chunkBase is what the rows of one chunk are stored relative to: the arena
// position and the created_at of its first row. It never changes.
type chunkBase struct {
	ids uint64
	at  int64
}

// farTime is the created_at of a row too far from its chunk's first.
type farTime struct {
	seq uint32
	at  int64
}

// table is the reservation table, indexed by seq (1-based).
//
// Copy on write: freeze hands out the chunk list and marks every chunk
// shared; the next write to a row of a shared chunk (mut) first replaces the
// chunk with a private copy. Appending never copies: rows past a frozen
// chunk's length are invisible to the frozen state. So a freeze costs one
// slice header per 4096 rows, and each chunk is copied (80 KiB) at most
// once per freeze, only if one of its rows changes.
type table struct {
	ids    arena
	extras []*reservationExtra // append-only; rows refer to them by index
	chunks [][]reservation
	bases  []chunkBase // bases[i] of chunks[i]; append-only
	far    []farTime   // in seq order; append-only
	// windows are the payment windows, normal then high-risk, that
	// expire_at follows (set by the definition, which never changes them).
	windows [2]int64
	// shared[i] is set while chunk i may be read by a frozen state.
	shared []bool
	count  uint32
}

// get returns row seq for reading, or nil. The row must not be changed
// through this pointer: use mut.
func (t *table) get(seq uint32) *reservation {
	if seq == 0 || seq > t.count {
		return nil
	}
	i := seq - 1
	return &t.chunks[i>>chunkShift][i&(chunkSize-1)]
}

// mut returns row seq for writing, or nil; a shared chunk is copied first.
func (t *table) mut(seq uint32) *reservation {
	if seq == 0 || seq > t.count {
		return nil
	}
	i := seq - 1
	c := i >> chunkShift
	if t.shared[c] {
		private := make([]reservation, len(t.chunks[c]), chunkSize)
		copy(private, t.chunks[c])
		t.chunks[c], t.shared[c] = private, false
	}
	return &t.chunks[c][i&(chunkSize-1)]
}

// add appends a row created at createdAt with its ids and returns its seq.
func (t *table) add(r reservation, requestID, userID string, createdAt int64) uint32 {
	pos := t.ids.add(requestID, userID)
	i := t.count
	if int(i>>chunkShift) == len(t.chunks) {
		t.chunks = append(t.chunks, make([]reservation, 0, chunkSize))
		t.bases = append(t.bases, chunkBase{ids: pos, at: createdAt})
		t.shared = append(t.shared, false)
	}
	base := &t.bases[i>>chunkShift]
	// A chunk's ids span at most 4096 pairs of at most 2*MaxIDLength bytes
	// (and a block's unused tail): far below 2^32.
	r.ids = uint32(pos - base.ids)
	r.reqLen, r.userLen = uint8(len(requestID)), uint8(len(userID))
	if d := createdAt - base.at; d >= 0 && d < createdFar {
		r.created = uint32(d)
	} else {
		r.created = createdFar
		t.far = append(t.far, farTime{seq: i + 1, at: createdAt})
	}
	c := &t.chunks[i>>chunkShift]
	*c = append(*c, r)
	t.count++
	return t.count
}

// freeze returns a read-only table of the rows as they are now and marks
// every chunk shared. The result must only be read (get), never written.
func (t *table) freeze() table {
	for i := range t.shared {
		t.shared[i] = true
	}
	return table{
		ids:     t.ids.freeze(),
		extras:  t.extras[:len(t.extras):len(t.extras)],
		chunks:  append([][]reservation(nil), t.chunks...),
		bases:   t.bases[:len(t.bases):len(t.bases)],
		far:     t.far[:len(t.far):len(t.far)],
		windows: t.windows,
		count:   t.count,
	}
}

// ids returns the arena position of row seq's ids.
func (t *table) idPos(seq uint32) (uint64, *reservation) {
	r := t.get(seq)
	return t.bases[(seq-1)>>chunkShift].ids + uint64(r.ids), r
}

// requestID returns row seq's request_id (a view of the arena, no copy).
func (t *table) requestID(seq uint32) string {
	pos, r := t.idPos(seq)
	return t.ids.str(pos, 0, int(r.reqLen))
}

// userID returns row seq's user_id.
func (t *table) userID(seq uint32) string {
	pos, r := t.idPos(seq)
	return t.ids.str(pos, int(r.reqLen), int(r.userLen))
}

// key returns row seq's request_id or user_id (for its indexes).
func (t *table) key(seq uint32, f keyField) string {
	if f == keyUserID {
		return t.userID(seq)
	}
	return t.requestID(seq)
}

// createdAt returns row seq's created_at in ms.
func (t *table) createdAt(seq uint32) int64 {
	r := t.get(seq)
	if r.created != createdFar {
		return t.bases[(seq-1)>>chunkShift].at + int64(r.created)
	}
	i, _ := slices.BinarySearchFunc(t.far, seq, func(f farTime, seq uint32) int { return cmp.Compare(f.seq, seq) })
	return t.far[i].at
}

// expireAt returns row seq's expire_at in ms: a payment at or after it is
// too late.
func (t *table) expireAt(seq uint32) int64 {
	w := t.windows[0]
	if t.get(seq).flags&flagShortWindow != 0 {
		w = t.windows[1]
	}
	return t.createdAt(seq) + w
}

// version returns the row's version: 1 when made, one more for its
// settlement (pay or close), for a release apart from the close and for
// each refund payment recorded.
func (t *table) version(r *reservation) uint32 {
	v := rowVersionBase(r, t.extra(r))
	if r.flags&flagReleasedApart != 0 {
		v++
	}
	return uint32(v)
}

// rowVersionBase is a row's version but for a release apart from its close.
func rowVersionBase(r *reservation, x *reservationExtra) uint64 {
	v := uint64(1)
	if r.state != StatePendingPayment {
		v++
	}
	if x != nil {
		v += uint64(len(x.refundPayments))
	}
	return v
}

// extra returns the row's payment and close details, nil when it has none.
// The result must not be changed: use editExtra.
func (t *table) extra(r *reservation) *reservationExtra {
	if r.extra == 0 {
		return nil
	}
	return t.extras[r.extra-1]
}

// editExtra installs in r (a row got through mut) a fresh copy of its
// extra (a new one if it has none) and returns it for the caller to change.
// The copy shares the refund slices' arrays: a refund appends past the
// length of every earlier extra of the row (a frozen state's included),
// into spare capacity only the row's current extra reaches, so recording
// the n-th refund copies nothing (clipping them copied the whole list for
// each refund, and the superseded extras kept every copy: n² for n
// refunds, which a payment system may send without bound). A superseded
// extra stays in the list: a row is edited once per pay, close, refund or
// release.
func (t *table) editExtra(r *reservation) *reservationExtra {
	x := &reservationExtra{}
	if old := t.extra(r); old != nil {
		*x = *old
	}
	t.extras = append(t.extras, x)
	r.extra = uint32(len(t.extras))
	return x
}
