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
// to its seq without storing the key: a slot holds a one-byte tag of the
// key's hash and the seq, and a lookup compares the candidate row's key in
// its rows (the reservation table, or a lottery's entry log), so an answer
// is exact; the tag spares that compare for all but 1 in 255 other keys.
// Tags and seqs are two arrays: a miss, the common case of a reserve,
// reads only tags. Open addressing, linear probing, backward-shift
// deletion, load at most 4/5 (a miss scans ~13 tag bytes, a hit ~3 slots),
// a table of any size (the home slot is the hash scaled to it, not masked),
// doubling up to indexDoublingSlots and growing by 5/4 beyond: then
// between 6.3 and 7.8 bytes per entry, and for a while after each growth
// the old table's 5 bytes per slot besides (see grow).
//
// Growth is incremental: growing allocates the new table and then moves
// growStep entries of the old one per insert or remove, so no single call
// rehashes millions of entries (a stall of tens of ms for a SKU's every
// caller). While the old table remains, a lookup probes the new table,
// then the old; a slot removed from the old table becomes a tombstone
// there (its tag stays, its seq is seqGone), so the old table's probe runs
// stay unbroken. A slot does not keep its hash: moving and shifting one
// hash its key again, read from its row.
//
// A move goes in one of two orders. When the old table holds every seq
// from 1 to its largest (the request_id index and a lottery's always do,
// the user index until its first removal), it moves the entries in seq
// order: the rows and their ids are read in the order they were written,
// where the old slots' order reads them all over the heap, a cache miss
// or two per key. A moved entry stays in the old table (a lookup finds it
// in the new one first; a removal tombstones it in both). A removal of an
// entry not yet moved switches the rest of the move to slot order: the old
// slots in turn, each moved becoming a tombstone, skipping the seqs
// already moved in seq order.
//
// The hash seed is random per index, so ids chosen by clients cannot be
// crafted to collide. The layout is not part of the state's Hash.
type index struct {
	cur slotTable
	old slotTable // the table being moved out (empty when not growing)
	// A move in seq order has seqs (bySeqDone, bySeqTo] left to move;
	// bySeqTo is 0 in slot order, which has old slots [moved, len) left
	// and skips seqs up to bySeqDone (moved before it switched).
	bySeqDone, bySeqTo uint32
	moved              int
	count              int    // entries in cur and old together
	last               uint32 // the largest seq inserted
	// doublingSlots is indexDoublingSlots (a test sets it lower, to grow
	// by 5/4 at its sizes).
	doublingSlots int
	seed          maphash.Seed
	rows          keyedRows
	field         keyField
}

// slotTable is one open-addressing table: tags[i] is 0 for an empty slot,
// else the tag of seqs[i]'s key.
type slotTable struct {
	tags []uint8
	seqs []uint32
}

// keyedRows are the rows an index points into: key returns the request_id
// or the user_id of row seq, which exists.
type keyedRows interface {
	key(seq uint32, f keyField) string
}

const (
	indexMinSlots = 1024
	// indexDoublingSlots: a smaller table (at most 5 MiB) doubles when it
	// grows, which hashes each key again once per insert over a growth
	// cycle; a larger one grows by 5/4, four times per insert, to keep the
	// bytes per entry down where they add up.
	indexDoublingSlots = 1 << 20
	seqGone            = math.MaxUint32 // tombstone in the old table
	// growStep is the old slots (or seqs) moved per insert or remove. A
	// new table of 5/4 of the old one's slots grows again after 1/5 of
	// them more inserts: a step of at least 5 finishes the move before; 64
	// keeps both tables alive for ~8% of the inserts, at most 64 keys
	// hashed again by one call.
	growStep = 64
)

func newIndex(rows keyedRows, f keyField) index {
	return index{seed: maphash.MakeSeed(), rows: rows, field: f, doublingSlots: indexDoublingSlots}
}

func (x *index) hash(key string) uint64 { return maphash.String(x.seed, key) }

// keyHashes are a reservation's request_id and user_id with their hashes
// in the byRequest and live indexes: ReserveWith hashes each id once, to
// look it up, and applying its RESERVED record indexes the ids with those
// hashes (Machine.reserving).
type keyHashes struct {
	requestID, userID string
	request, user     uint64
}

// tagOf is h's tag: its low byte, never 0.
func tagOf(h uint64) uint8 {
	if t := uint8(h); t != 0 {
		return t
	}
	return 1
}

// home is h's first slot in a table of n slots: its high 32 bits scaled to
// n (independent of the tag's bits).
func home(h uint64, n int) int { return int((h >> 32) * uint64(n) >> 32) }

func (x *index) keyOf(seq uint32) string { return x.rows.key(seq, x.field) }

// get returns the seq stored under key.
func (x *index) get(key string) (uint32, bool) {
	if x.count == 0 {
		return 0, false
	}
	return x.getHashed(x.hash(key), key)
}

func (x *index) getHashed(h uint64, key string) (uint32, bool) {
	if x.count == 0 {
		return 0, false
	}
	if seq, ok := x.find(&x.cur, h, key); ok {
		return seq, true
	}
	if len(x.old.tags) != 0 {
		return x.find(&x.old, h, key)
	}
	return 0, false
}

// find returns the seq stored under key in t.
func (x *index) find(t *slotTable, h uint64, key string) (uint32, bool) {
	n, tag := len(t.tags), tagOf(h)
	for i := home(h, n); ; {
		switch t.tags[i] {
		case 0:
			return 0, false
		case tag:
			if s := t.seqs[i]; s != seqGone && x.keyOf(s) == key {
				return s, true
			}
		}
		if i++; i == n {
			i = 0
		}
	}
}

// insert stores seq under key, which must be absent; the row seq must
// already be in the table with that key.
func (x *index) insert(key string, seq uint32) {
	x.insertHashed(x.hash(key), seq)
}

// insertNew stores seq under key unless key is present: false then.
func (x *index) insertNew(key string, seq uint32) bool {
	h := x.hash(key)
	if _, ok := x.getHashed(h, key); ok {
		return false
	}
	x.insertHashed(h, seq)
	return true
}

func (x *index) insertHashed(h uint64, seq uint32) {
	if seq == 0 || seq == seqGone {
		panic("sku: index: reserved seq")
	}
	x.move()
	if n := len(x.cur.tags); (x.count+1)*5 > n*4 {
		if n < x.doublingSlots {
			x.grow(2 * n)
		} else {
			x.grow(n + n/4)
		}
	}
	x.cur.place(h, seq)
	x.count++
	x.last = max(x.last, seq)
}

// presize sizes an empty table for n entries at one of the sizes a table
// grown from empty passes through (indexMinSlots doubled), so its later
// growths, and the bytes per entry at each size, are those of a table
// that grew to it.
func (x *index) presize(n int) {
	if x.count != 0 {
		return
	}
	slots := indexMinSlots
	for slots*4/5 < n && slots < x.doublingSlots {
		slots *= 2
	}
	if slots > len(x.cur.tags) {
		x.grow(slots)
	}
}

// reserve sizes the table for n entries before they are inserted (a state
// being decoded knows its row count) as a growth would leave it: at load
// 0.64, so the inserts that follow (a log's tail replayed) do not start
// moving every entry at once.
func (x *index) reserve(n int) {
	if slots := n + n/2 + n/16 + 1; slots > len(x.cur.tags) {
		x.grow(slots)
	}
}

func (t *slotTable) place(h uint64, seq uint32) {
	n := len(t.tags)
	i := home(h, n)
	for t.tags[i] != 0 {
		if i++; i == n {
			i = 0
		}
	}
	t.tags[i], t.seqs[i] = tagOf(h), seq
}

// grow starts moving into a table of n slots (finishing a move still under
// way first, which growStep makes rare), in seq order when the table holds
// every seq up to the largest: count of them, all distinct.
func (x *index) grow(n int) {
	for len(x.old.tags) != 0 {
		x.move()
	}
	n = max(n, indexMinSlots)
	if x.count > 0 {
		x.old = x.cur
		if x.count == int(x.last) {
			x.bySeqTo = x.last
		}
	}
	x.cur = slotTable{tags: make([]uint8, n), seqs: make([]uint32, n)}
}

// move moves up to growStep entries of the old table into the new one, in
// passes: the seqs, their rows' keys, their hashes, their new slots. Each
// pass's memory reads are independent of one another (in slot order rows
// and ids all over the heap; new slots in either order), so the processor
// overlaps their cache misses, where moving one key after the other
// waited for each in turn.
func (x *index) move() {
	if len(x.old.tags) == 0 {
		return
	}
	var seqs [growStep]uint32
	k := 0
	if x.bySeqTo != 0 {
		for ; k < growStep && x.bySeqDone < x.bySeqTo; k++ {
			x.bySeqDone++
			seqs[k] = x.bySeqDone
		}
	} else {
		end := min(x.moved+growStep, len(x.old.tags))
		for i := x.moved; i < end; i++ {
			if s := x.old.seqs[i]; x.old.tags[i] != 0 && s != seqGone && s > x.bySeqDone {
				seqs[k] = s
				k++
				x.old.seqs[i] = seqGone
			}
		}
		x.moved = end
	}
	var keys [growStep]string
	for j := range k {
		keys[j] = x.keyOf(seqs[j])
	}
	var hashes [growStep]uint64
	for j := range k {
		hashes[j] = x.hash(keys[j])
	}
	for j := range k {
		x.cur.place(hashes[j], seqs[j])
	}
	if x.moved == len(x.old.tags) || (x.bySeqTo != 0 && x.bySeqDone == x.bySeqTo) {
		x.old, x.moved, x.bySeqDone, x.bySeqTo = slotTable{}, 0, 0, 0
	}
}

// remove deletes key, which must map to seq.
func (x *index) remove(key string, seq uint32) {
	x.move()
	h := x.hash(key)
	inCur := x.removeShifting(&x.cur, h, seq)
	// A seq moved in seq order is in both tables.
	inOld := (!inCur || seq <= x.bySeqDone) && x.old.tombstone(h, seq)
	if inCur || inOld {
		x.count--
	}
	if inOld && seq > x.bySeqDone && x.bySeqTo != 0 {
		x.bySeqTo = 0 // the seq order would move the tombstone's seq
	}
}

// tombstone marks the slot of seq in t removed, if it is there: its tag
// stays, so the probe runs through it stay unbroken.
func (t *slotTable) tombstone(h uint64, seq uint32) bool {
	n, tag := len(t.tags), tagOf(h)
	if n == 0 {
		return false
	}
	for i := home(h, n); t.tags[i] != 0; {
		if t.tags[i] == tag && t.seqs[i] == seq {
			t.seqs[i] = seqGone
			return true
		}
		if i++; i == n {
			i = 0
		}
	}
	return false
}

// removeShifting deletes the slot of seq from t (a table without
// tombstones): later slots of the probe run shift back, so lookups never
// need tombstones there.
func (x *index) removeShifting(t *slotTable, h uint64, seq uint32) bool {
	n, tag := len(t.tags), tagOf(h)
	if n == 0 {
		return false
	}
	i := home(h, n)
	for t.tags[i] != tag || t.seqs[i] != seq {
		if t.tags[i] == 0 {
			return false
		}
		if i++; i == n {
			i = 0
		}
	}
	for j := next(i, n); t.tags[j] != 0; j = next(j, n) {
		hj := home(x.hash(x.keyOf(t.seqs[j])), n)
		// Move slot j back to the hole at i unless its home lies in (i, j].
		if (j > i && (hj <= i || hj > j)) || (j < i && hj <= i && hj > j) {
			t.tags[i], t.seqs[i] = t.tags[j], t.seqs[j]
			i = j
		}
	}
	t.tags[i], t.seqs[i] = 0, 0
	return true
}

func next(i, n int) int {
	if i++; i == n {
		return 0
	}
	return i
}

func (x *index) len() int { return x.count }
