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
type requestFilter struct {
	words []atomic.Uint64
	mask  uint64 // words - 1
	seed  maphash.Seed
}

// Bounds of the filter: a blocked Bloom filter (Putze et al.) with every
// probe of a key in one 64-bit word, so an add is one atomic OR and a test
// one load: 16 bits per expected request and 4 bits per key give ~1%
// false positives at the expected fill. At least 64 Ki bits, at most
// 64 Mi bits (8 MiB) per SKU.
const (
	filterBitsPerRequest = 16
	filterMinBits        = 1 << 16
	filterMaxBits        = 1 << 26
	filterProbes         = 4
)

// newRequestFilter sizes a filter for about expected request_ids.
func newRequestFilter(expected uint64) *requestFilter {
	n := expected * filterBitsPerRequest
	switch {
	case n < filterMinBits:
		n = filterMinBits
	case n > filterMaxBits:
		n = filterMaxBits
	default:
		n = 1 << bits.Len64(n-1)
	}
	return &requestFilter{words: make([]atomic.Uint64, n/64), mask: n/64 - 1, seed: maphash.MakeSeed()}
}

// locate returns the word of id and the bits it sets there.
func (f *requestFilter) locate(id string) (*atomic.Uint64, uint64) {
	h := maphash.String(f.seed, id)
	w := &f.words[h&f.mask] // the low bits pick the word (at most 2^20 words)
	var set uint64
	for i, b := 0, h>>40; i < filterProbes; i, b = i+1, b>>6 { // the top 24 bits pick the bits
		set |= 1 << (b & 63)
	}
	return w, set
}

// add records id. Safe for one writer and many readers.
func (f *requestFilter) add(id string) {
	w, set := f.locate(id)
	w.Or(set)
}

// mayContain reports false only if id was never added.
func (f *requestFilter) mayContain(id string) bool {
	w, set := f.locate(id)
	return w.Load()&set == set
}
