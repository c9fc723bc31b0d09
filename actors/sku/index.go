package sku

import "hash/maphash"

// keyField says which string of a reservation row an index is keyed by.
type keyField uint8

const (
	keyRequestID keyField = iota
	keyUserID
)

// index maps a reservation's request_id or user_id to its seq without
// storing the key: a slot holds the key's 32-bit hash and the seq, and a
// lookup compares the candidate row's key in the table. Open addressing,
// linear probing, backward-shift deletion (no tombstones), load at most 1/2
// (a miss probes ~2.5 slots), doubling growth. About 20 bytes per entry,
// against ~40 for a Go map[string]uint32, and no per-insert table splits.
//
// The hash seed is random per index, so ids chosen by clients cannot be
// crafted to collide. The layout is not part of the state's Hash.
type index struct {
	slots []indexSlot // length a power of two (or zero)
	count int
	seed  maphash.Seed
	table *table
	field keyField
}

type indexSlot struct {
	hash uint32
	seq  uint32 // 0: empty
}

const indexMinSlots = 1024

func newIndex(t *table, f keyField) index {
	return index{seed: maphash.MakeSeed(), table: t, field: f}
}

func (x *index) hash(key string) uint32 { return uint32(maphash.String(x.seed, key)) }

func (x *index) keyOf(seq uint32) string {
	r := x.table.get(seq)
	if x.field == keyUserID {
		return x.table.userID(r)
	}
	return x.table.requestID(r)
}

// get returns the seq stored under key.
func (x *index) get(key string) (uint32, bool) {
	if x.count == 0 {
		return 0, false
	}
	h := x.hash(key)
	mask := uint32(len(x.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := x.slots[i]
		if s.seq == 0 {
			return 0, false
		}
		if s.hash == h && x.keyOf(s.seq) == key {
			return s.seq, true
		}
	}
}

// insert stores seq under key, which must be absent; the row seq must
// already be in the table with that key.
func (x *index) insert(key string, seq uint32) {
	if (x.count+1)*2 > len(x.slots) {
		x.grow()
	}
	x.place(indexSlot{hash: x.hash(key), seq: seq})
	x.count++
}

func (x *index) place(s indexSlot) {
	mask := uint32(len(x.slots) - 1)
	i := s.hash & mask
	for x.slots[i].seq != 0 {
		i = (i + 1) & mask
	}
	x.slots[i] = s
}

func (x *index) grow() {
	old := x.slots
	n := 2 * len(old)
	if n < indexMinSlots {
		n = indexMinSlots
	}
	x.slots = make([]indexSlot, n)
	for _, s := range old {
		if s.seq != 0 {
			x.place(s)
		}
	}
}

// remove deletes key, which must map to seq. Later slots of the probe run
// shift back, so lookups never need tombstones.
func (x *index) remove(key string, seq uint32) {
	h := x.hash(key)
	mask := uint32(len(x.slots) - 1)
	i := h & mask
	for x.slots[i].seq != seq {
		if x.slots[i].seq == 0 {
			return
		}
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; x.slots[j].seq != 0; j = (j + 1) & mask {
		home := x.slots[j].hash & mask
		// Move slot j back to the hole at i unless its home lies in (i, j].
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = indexSlot{}
	x.count--
}

func (x *index) len() int { return x.count }
