package sku

// reservation is the in-memory row of one reservation: 40 bytes and no
// pointer, so the garbage collector never scans the table. Its request_id
// and user_id bytes sit side by side in the table's arena, and payment and
// close details, which only settled reservations need, in the table's
// extras.
//
// Rows are shared with frozen states (see Freeze): a row is changed only
// through table.mut, and an extra is never changed in place (editExtra
// installs a fresh one).
type reservation struct {
	ids       uint64 // arena position of request_id then user_id
	reqLen    uint8
	userLen   uint8
	state     State
	flags     uint8 // reason in the low 2 bits, flagHoldsToken, flagRefund
	version   uint16
	extra     uint32 // 1 + index in table.extras; 0: none
	token     uint32
	createdAt int64 // ms
	expireAt  int64 // ms
}

const (
	flagReasonMask = 0x03
	flagHoldsToken = 0x04
	flagRefund     = 0x08
	// flagsKnown are the flag bits a row may have; the state decoder refuses others.
	flagsKnown = flagReasonMask | flagHoldsToken | flagRefund
)

func (r *reservation) reason() CloseReason { return CloseReason(r.flags & flagReasonMask) }
func (r *reservation) holdsToken() bool    { return r.flags&flagHoldsToken != 0 }
func (r *reservation) refundRequired() bool {
	return r.flags&flagRefund != 0
}

// reservationExtra holds what only paid or closed reservations need. It is
// immutable once installed in a row: a frozen state may be reading it.
type reservationExtra struct {
	paymentID      string
	amount         int64
	paidAt         int64
	closedAt       int64
	refundPayments []string
	refundAmounts  []int64
}

// chunkShift sets the chunk size of the reservation table: 4096 rows of 40
// bytes. Chunks never move, so the table grows without copying and without
// the slack of a doubling slice.
const chunkShift = 12
const chunkSize = 1 << chunkShift

// table is the reservation table, indexed by seq (1-based).
//
// Copy on write: freeze hands out the chunk list and marks every chunk
// shared; the next write to a row of a shared chunk (mut) first replaces the
// chunk with a private copy. Appending never copies: rows past a frozen
// chunk's length are invisible to the frozen state. So a freeze costs one
// slice header per 4096 rows, and each chunk is copied (256 KiB) at most
// once per freeze, only if one of its rows changes.
type table struct {
	ids    arena
	extras []*reservationExtra // append-only; rows refer to them by index
	chunks [][]reservation
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

// add appends a row with its ids and returns its seq.
func (t *table) add(r reservation, requestID, userID string) uint32 {
	r.ids = t.ids.add(requestID, userID)
	r.reqLen, r.userLen = uint8(len(requestID)), uint8(len(userID))
	i := t.count
	if int(i>>chunkShift) == len(t.chunks) {
		t.chunks = append(t.chunks, make([]reservation, 0, chunkSize))
		t.shared = append(t.shared, false)
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
		ids:    t.ids.freeze(),
		extras: t.extras[:len(t.extras):len(t.extras)],
		chunks: append([][]reservation(nil), t.chunks...),
		count:  t.count,
	}
}

// requestID returns the row's request_id (a view of the arena, no copy).
func (t *table) requestID(r *reservation) string {
	return t.ids.str(r.ids, 0, int(r.reqLen))
}

// userID returns the row's user_id.
func (t *table) userID(r *reservation) string {
	return t.ids.str(r.ids, int(r.reqLen), int(r.userLen))
}

// key returns row seq's request_id or user_id (for its indexes).
func (t *table) key(seq uint32, f keyField) string {
	r := t.get(seq)
	if f == keyUserID {
		return t.userID(r)
	}
	return t.requestID(r)
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
// The refund slices are clipped, so an append never writes into an array a
// frozen state shares. A superseded extra stays in the list: a row is
// edited at most a few times (pay or close, refunds, release).
func (t *table) editExtra(r *reservation) *reservationExtra {
	x := &reservationExtra{}
	if old := t.extra(r); old != nil {
		*x = *old
		x.refundPayments = x.refundPayments[:len(x.refundPayments):len(x.refundPayments)]
		x.refundAmounts = x.refundAmounts[:len(x.refundAmounts):len(x.refundAmounts)]
	}
	t.extras = append(t.extras, x)
	r.extra = uint32(len(t.extras))
	return x
}
