package sku

// Frozen is a read-only copy of a Machine's state at one moment, cheap to
// take and safe to read from another goroutine while the Machine goes on
// changing: the reservation table is shared chunk by chunk with copy on
// write, the append-only rejection and refund lists are shared by length,
// and only the small released-token FIFO is copied. Derived state (indexes,
// counters, token slots) is not kept: Restore rebuilds it.
//
// Freeze is the only part of a snapshot that runs on the Machine's
// goroutine; Encode may then run anywhere, once.
type Frozen struct {
	def     Definition
	defined bool
	paused  bool
	lastAt  int64
	counts  Counts

	// handedOut is the number of token ids ever handed out: 1..handedOut
	// have slots (tokenPool.slots), which the rows determine.
	handedOut  uint32
	released   []uint32 // the FIFO of released tokens, oldest first (a copy)
	table      table
	rejections rejectionLog
	refunds    []Refund
	holders    holderList
	lot        *lotteryState // a lottery's entries and draw, nil otherwise
}

// Freeze returns the state as it is now. It runs in O(reservations/4096 +
// released tokens) and allocates about that much: at 1,000,000
// reservations it copies ~250 chunk headers. The Machine copies a chunk of
// 4096 rows the first time it changes one of them afterwards.
func (m *Machine) Freeze() *Frozen {
	return &Frozen{
		def:        m.def,
		defined:    m.defined,
		paused:     m.paused,
		lastAt:     m.lastAt,
		counts:     m.Counts(),
		handedOut:  uint32(len(m.pool.slots)),
		released:   append([]uint32(nil), m.pool.released[m.pool.releasedHead:]...),
		table:      m.table.freeze(),
		rejections: m.rejections.freeze(),
		refunds:    m.refunds[:len(m.refunds):len(m.refunds)],
		holders:    m.holders.freeze(),
		lot:        m.freezeLottery(),
	}
}

// Definition returns the definition at the freeze.
func (f *Frozen) Definition() Definition { return f.def }

// Counts returns the counters at the freeze.
func (f *Frozen) Counts() Counts { return f.counts }

// LastAt returns the time of the last record applied before the freeze, in ms.
func (f *Frozen) LastAt() int64 { return f.lastAt }
