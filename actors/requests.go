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
	mask  uint64 // bits - 1
	seed  maphash.Seed
}

// Bounds of the filter: 16 bits per expected request (4 probes: ~0.2%
// false positives at the expected fill), at least 64 Ki bits, at most
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
	return &requestFilter{words: make([]atomic.Uint64, n/64), mask: n - 1, seed: maphash.MakeSeed()}
}

func (f *requestFilter) probes(id string) (h1, h2 uint64) {
	h := maphash.String(f.seed, id)
	return h, h>>32 | h<<32 | 1
}

// add records id. Safe for one writer and many readers.
func (f *requestFilter) add(id string) {
	h1, h2 := f.probes(id)
	for i := uint64(0); i < filterProbes; i++ {
		b := (h1 + i*h2) & f.mask
		f.words[b/64].Or(1 << (b % 64))
	}
}

// mayContain reports false only if id was never added.
func (f *requestFilter) mayContain(id string) bool {
	h1, h2 := f.probes(id)
	for i := uint64(0); i < filterProbes; i++ {
		b := (h1 + i*h2) & f.mask
		if f.words[b/64].Load()&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}
