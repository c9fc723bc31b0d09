package actors

import (
	"hash/maphash"
	"math/bits"
	"sync/atomic"
)

// requestFilter is a Bloom filter of the request_ids a SKU has decided
// (accepted or durably rejected), readable by the ingress without a
// message. The sold-out and window fast paths answer without the actor; a
// repeat of a decided request_id must instead get its original answer (one
// request_id, one result), so the ingress asks the actor whenever the
// filter says "maybe". A false positive costs one actor round trip; there
// are no false negatives.
//
// Bits are set at decision time, before the record is durable: that only
// sends a request to the actor, which answers from durable state.
//
// It grows with the request_ids decided, not with sale_limit: a scalable
// Bloom filter (Almeida et al., 2007), a chain of blocked Bloom filters
// (stages), each holding four times the ids of the one before with more
// bits per id. An add sets bits in the newest stage only, so growing
// copies nothing and never pauses the actor; a test looks in every stage.
// A SKU that has decided few request_ids keeps a filter that stays in
// cache (each add is a random word of it: perf under a hot run showed the
// add of a filter sized for sale_limit, megabytes, costing a cache miss
// apiece), and a campaign of many SKUs with large sale_limits holds no
// memory for ids it has not decided.
type requestFilter struct {
	seed maphash.Seed
	// stages is the published chain, oldest first; the writer replaces
	// the slice (never a stage) when it opens a stage.
	stages atomic.Pointer[[]*filterStage]
	// Writer-only: the newest stage's count of ids added.
	count uint64
}

// filterStage is one blocked Bloom filter (Putze et al.) with every probe
// of a key in one 64-bit word, so an add is one atomic OR and a test one
// load.
type filterStage struct {
	words    []atomic.Uint64
	mask     uint64 // len(words) - 1
	capacity uint64 // ids it is sized for; the next stage opens beyond
	bitsPer  uint64 // bits per id it was sized with
}

// Bounds of the filter. The first stage holds the ids the SKU is expected
// to decide (twice sale_limit, core.RequestCapacity) within
// [filterFirstMin, filterFirstMax]; each next stage four times as many,
// with filterBitsPerStage more bits per id, so that the stages' false
// positives together stay near 1% (4 bits per key: ~0.5% for a stage
// full at 16 bits per id, ~0.3% at 20, ~0.2% at 24, ~0.13% at 28).
// A stage has at most filterMaxBits (8 MiB); once one has, no stage opens
// after it and it takes every later id (its false positives then rise
// with its fill).
const (
	filterBitsPerRequest = 16
	filterBitsPerStage   = 4
	filterFirstMin       = 1 << 12 // 8 KiB at 16 bits per id
	filterFirstMax       = 1 << 16 // 128 KiB
	filterMinBits        = 1 << 16
	filterMaxBits        = 1 << 26
	filterProbes         = 4
)

// newRequestFilter returns a filter whose first stage holds about
// expected request_ids (within the first stage's bounds).
func newRequestFilter(expected uint64) *requestFilter {
	f := &requestFilter{seed: maphash.MakeSeed()}
	stages := []*filterStage{newFilterStage(min(max(expected, filterFirstMin), filterFirstMax), filterBitsPerRequest)}
	f.stages.Store(&stages)
	return f
}

// newFilterStage sizes a stage for capacity ids at bitsPer bits each, in
// a power of two of words within [filterMinBits, filterMaxBits].
func newFilterStage(capacity, bitsPer uint64) *filterStage {
	n := min(max(capacity*bitsPer, filterMinBits), filterMaxBits)
	n = 1 << bits.Len64(n-1)
	return &filterStage{words: make([]atomic.Uint64, n/64), mask: n/64 - 1, capacity: capacity, bitsPer: bitsPer}
}

// locate returns the hash of id's word index and the bits it sets in
// its word of any stage.
func (f *requestFilter) locate(id string) (h, set uint64) {
	h = maphash.String(f.seed, id)
	for i, b := 0, h>>40; i < filterProbes; i, b = i+1, b>>6 { // the top 24 bits pick the bits
		set |= 1 << (b & 63)
	}
	return h, set // the low bits pick the word (at most 2^20 words)
}

// add records id in the newest stage, opening the next when it is full.
// One writer (the actor); safe against readers.
func (f *requestFilter) add(id string) {
	h, set := f.locate(id)
	stages := *f.stages.Load()
	s := stages[len(stages)-1]
	s.words[h&s.mask].Or(set)
	if f.count++; f.count < s.capacity || uint64(len(s.words))*64 >= filterMaxBits {
		return
	}
	grown := append(stages[:len(stages):len(stages)], newFilterStage(4*s.capacity, s.bitsPer+filterBitsPerStage))
	f.stages.Store(&grown)
	f.count = 0
}

// empty reports whether no id was added yet.
func (f *requestFilter) empty() bool { return f.count == 0 && len(*f.stages.Load()) == 1 }

// mayContain reports false only if id was never added.
func (f *requestFilter) mayContain(id string) bool {
	h, set := f.locate(id)
	for _, s := range *f.stages.Load() {
		if s.words[h&s.mask].Load()&set == set {
			return true
		}
	}
	return false
}
