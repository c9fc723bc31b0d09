package sku

import (
	"hash/maphash"
	"math"
)

// keyField says which string of a reservation row an index is keyed by.
type keyField uint8

const (
	keyRequestID keyField = iota
	keyUserID
)

// index maps a reservation's (or a lottery entry's) request_id or user_id
// to its seq without storing the key: a slot holds the key's 32-bit hash
// and the seq, and a lookup compares the candidate row's key in its rows
// (the reservation table, or a lottery's entry log). Open addressing,
// linear probing, backward-shift deletion, load at most 1/2 (a miss probes
// ~2.5 slots). About 20 bytes per entry, against ~40 for a Go
// map[string]uint32, and no per-insert table splits.
//
// Growth is incremental: doubling allocates the new table and then moves
// growStep slots of the old one per insert or remove, so no single call
// rehashes millions of entries (a stall of tens of ms for a SKU's every
// caller). While old slots remain, a lookup probes the new table, then the
// old; a slot moved or removed from the old table becomes a tombstone
// there, so the old table's probe runs stay unbroken.
//
// The hash seed is random per index, so ids chosen by clients cannot be
// crafted to collide. The layout is not part of the state's Hash.
type index struct {
	slots []indexSlot // length a power of two (or zero)
	old   []indexSlot // the table being moved out (nil when not growing)
	moved int         // old[:moved] has been moved
	count int         // entries in slots and old together
	seed  maphash.Seed
	rows  keyedRows
	field keyField
}

// keyedRows are the rows an index points into: key returns the request_id
// or the user_id of row seq, which exists.
type keyedRows interface {
	key(seq uint32, f keyField) string
}

type indexSlot struct {
	hash uint32
	seq  uint32 // seqEmpty, seqGone (old table only) or a reservation
}

const (
	indexMinSlots = 1024
	seqEmpty      = 0
	seqGone       = math.MaxUint32 // tombstone in the old table
	// growStep is the old slots moved per insert or remove: at least 2
	// finish the move before the new table needs to grow in turn (it
	// holds twice the old table's slots, filled from half to half).
	growStep = 8
)

func newIndex(rows keyedRows, f keyField) index {
	return index{seed: maphash.MakeSeed(), rows: rows, field: f}
}

func (x *index) hash(key string) uint32 { return uint32(maphash.String(x.seed, key)) }

func (x *index) keyOf(seq uint32) string { return x.rows.key(seq, x.field) }

// get returns the seq stored under key.
func (x *index) get(key string) (uint32, bool) {
	if x.count == 0 {
		return 0, false
	}
	h := x.hash(key)
	if i, ok := x.find(x.slots, h, key); ok {
		return x.slots[i].seq, true
	}
	if x.old != nil {
		if i, ok := x.find(x.old, h, key); ok {
			return x.old[i].seq, true
		}
	}
	return 0, false
}

// find returns the slot of key in slots.
func (x *index) find(slots []indexSlot, h uint32, key string) (uint32, bool) {
	mask := uint32(len(slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := slots[i]
		if s.seq == seqEmpty {
			return 0, false
		}
		if s.hash == h && s.seq != seqGone && x.keyOf(s.seq) == key {
			return i, true
		}
	}
}

// insert stores seq under key, which must be absent; the row seq must
// already be in the table with that key.
func (x *index) insert(key string, seq uint32) {
	if seq == seqEmpty || seq == seqGone {
		panic("sku: index: reserved seq")
	}
	x.move(growStep)
	if (x.count+1)*2 > len(x.slots) {
		x.grow()
	}
	place(x.slots, indexSlot{hash: x.hash(key), seq: seq})
	x.count++
}

func place(slots []indexSlot, s indexSlot) {
	mask := uint32(len(slots) - 1)
	i := s.hash & mask
	for slots[i].seq != seqEmpty {
		i = (i + 1) & mask
	}
	slots[i] = s
}

// grow starts moving into a table twice as large (finishing a move still
// under way first, which growStep makes rare).
func (x *index) grow() {
	x.move(len(x.old))
	n := 2 * len(x.slots)
	if n < indexMinSlots {
		n = indexMinSlots
	}
	if x.count > 0 {
		x.old, x.moved = x.slots, 0
	}
	x.slots = make([]indexSlot, n)
}

// move moves up to n slots of the old table into the new one.
func (x *index) move(n int) {
	if x.old == nil {
		return
	}
	end := min(x.moved+n, len(x.old))
	for i := x.moved; i < end; i++ {
		if s := x.old[i]; s.seq != seqEmpty && s.seq != seqGone {
			place(x.slots, s)
			x.old[i].seq = seqGone
		}
	}
	x.moved = end
	if x.moved == len(x.old) {
		x.old, x.moved = nil, 0
	}
}

// remove deletes key, which must map to seq.
func (x *index) remove(key string, seq uint32) {
	x.move(growStep)
	h := x.hash(key)
	if removeShifting(x.slots, h, seq) {
		x.count--
		return
	}
	if x.old == nil {
		return
	}
	mask := uint32(len(x.old) - 1)
	for i := h & mask; x.old[i].seq != seqEmpty; i = (i + 1) & mask {
		if x.old[i].seq == seq {
			x.old[i].seq = seqGone
			x.count--
			return
		}
	}
}

// removeShifting deletes the slot of seq from slots (a table without
// tombstones): later slots of the probe run shift back, so lookups never
// need tombstones there.
func removeShifting(slots []indexSlot, h uint32, seq uint32) bool {
	if len(slots) == 0 {
		return false
	}
	mask := uint32(len(slots) - 1)
	i := h & mask
	for slots[i].seq != seq {
		if slots[i].seq == seqEmpty {
			return false
		}
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; slots[j].seq != seqEmpty; j = (j + 1) & mask {
		home := slots[j].hash & mask
		// Move slot j back to the hole at i unless its home lies in (i, j].
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			slots[i] = slots[j]
			i = j
		}
	}
	slots[i] = indexSlot{}
	return true
}

func (x *index) len() int { return x.count }
