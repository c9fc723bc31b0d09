package sku

// reservation is the in-memory row of one reservation: 64 bytes, plus the
// request_id and user_id bytes (one allocation shared with the indexes) and
// an optional side row for payment and close details.
type reservation struct {
	requestID string
	userID    string
	extra     *reservationExtra
	createdAt int64 // ms
	expireAt  int64 // ms
	token     uint32
	version   uint16
	state     State
	flags     uint8 // reason in the low 2 bits, flagHoldsToken, flagRefund
}

const (
	flagReasonMask = 0x03
	flagHoldsToken = 0x04
	flagRefund     = 0x08
)

func (r *reservation) reason() CloseReason { return CloseReason(r.flags & flagReasonMask) }
func (r *reservation) holdsToken() bool    { return r.flags&flagHoldsToken != 0 }
func (r *reservation) refundRequired() bool {
	return r.flags&flagRefund != 0
}

// reservationExtra holds what only paid or closed reservations need.
type reservationExtra struct {
	paymentID      string
	amount         int64
	paidAt         int64
	closedAt       int64
	refundPayments []string
	refundAmounts  []int64
}

// chunkShift sets the chunk size of the reservation table: 4096 rows of 64
// bytes. Chunks never move, so the table grows without copying and without
// the slack of a doubling slice.
const chunkShift = 12
const chunkSize = 1 << chunkShift

// table is the reservation table, indexed by seq (1-based).
type table struct {
	chunks [][]reservation
	count  uint32
}

func (t *table) get(seq uint32) *reservation {
	if seq == 0 || seq > t.count {
		return nil
	}
	i := seq - 1
	return &t.chunks[i>>chunkShift][i&(chunkSize-1)]
}

// add appends a row and returns its seq.
func (t *table) add(r reservation) uint32 {
	i := t.count
	if int(i>>chunkShift) == len(t.chunks) {
		t.chunks = append(t.chunks, make([]reservation, 0, chunkSize))
	}
	c := &t.chunks[i>>chunkShift]
	*c = append(*c, r)
	t.count++
	return t.count
}
