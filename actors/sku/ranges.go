package sku

import "fmt"

// TokenRange is the tokens First..Last, both included (1 <= First <= Last
// <= sale_limit). The quota ledger hands token ids out in ranges, disjoint
// by construction, so a token id names one unit of the SKU across every
// cell that sells it.
type TokenRange struct {
	First uint32 `json:"first"`
	Last  uint32 `json:"last"`
}

// Units returns the number of tokens in r.
func (r TokenRange) Units() uint32 { return r.Last - r.First + 1 }

func (r TokenRange) String() string { return fmt.Sprintf("%d-%d", r.First, r.Last) }

// MaxRangesPerRecord bounds the token ranges of one GRANT or RETURN record.
const MaxRangesPerRecord = 1024

// RangesUnits returns the number of tokens in rs.
func RangesUnits(rs []TokenRange) uint64 {
	var n uint64
	for _, r := range rs {
		n += uint64(r.Units())
	}
	return n
}

// CheckRanges reports why rs is not a valid list of token ranges of a SKU
// with the given sale_limit: 1..MaxRangesPerRecord ranges, each within
// 1..sale_limit, sorted ascending and pairwise disjoint. nil when valid.
func CheckRanges(rs []TokenRange, saleLimit uint32) error {
	if len(rs) == 0 || len(rs) > MaxRangesPerRecord {
		return fmt.Errorf("%d token ranges, want 1..%d", len(rs), MaxRangesPerRecord)
	}
	return checkSorted(rs, saleLimit)
}

// checkSorted reports why rs is not sorted, disjoint and within
// 1..sale_limit; nil when it is (an empty list is).
func checkSorted(rs []TokenRange, saleLimit uint32) error {
	for i, r := range rs {
		if r.First == 0 || r.First > r.Last || r.Last > saleLimit {
			return fmt.Errorf("token range %s outside 1..%d", r, saleLimit)
		}
		if i > 0 && rs[i-1].Last >= r.First {
			return fmt.Errorf("token ranges %s and %s overlap or are out of order", rs[i-1], r)
		}
	}
	return nil
}

// inRanges reports whether token lies in one of the sorted ranges rs.
func inRanges(rs []TokenRange, token uint32) bool {
	lo, hi := 0, len(rs)
	for lo < hi {
		mid := (lo + hi) / 2
		switch {
		case token < rs[mid].First:
			hi = mid
		case token > rs[mid].Last:
			lo = mid + 1
		default:
			return true
		}
	}
	return false
}

// rangeQueue is a cell's granted tokens that were never handed out since
// their grant: ranges in grant order, handed out from the front, lowest id
// of the first range first. units is kept in step with the ranges.
type rangeQueue struct {
	ranges []TokenRange
	units  uint32
}

// first returns the token the next pop hands out, or 0 when empty.
func (q *rangeQueue) first() uint32 {
	if len(q.ranges) == 0 {
		return 0
	}
	return q.ranges[0].First
}

// pop removes the first token (the queue must not be empty).
func (q *rangeQueue) pop() {
	r := &q.ranges[0]
	if r.First == r.Last {
		q.ranges = q.ranges[1:]
	} else {
		r.First++
	}
	q.units--
}

// push appends the ranges of a grant.
func (q *rangeQueue) push(rs []TokenRange) {
	for _, r := range rs {
		q.ranges = append(q.ranges, r)
		q.units += r.Units()
	}
}

// overlap counts the queued tokens that lie in the sorted ranges rs.
func (q *rangeQueue) overlap(rs []TokenRange) uint64 {
	var n uint64
	for _, a := range q.ranges {
		for _, b := range rs {
			lo, hi := max(a.First, b.First), min(a.Last, b.Last)
			if lo <= hi {
				n += uint64(hi - lo + 1)
			}
		}
	}
	return n
}

// remove takes every token of the sorted ranges rs out of the queue,
// splitting queued ranges as needed and keeping their order.
func (q *rangeQueue) remove(rs []TokenRange) {
	var out []TokenRange
	for _, a := range q.ranges {
		for _, b := range rs {
			if b.Last < a.First || b.First > a.Last {
				continue
			}
			if b.First > a.First {
				out = append(out, TokenRange{a.First, b.First - 1})
			}
			if b.Last >= a.Last {
				a.First = a.Last + 1 // consumed to its end
				break
			}
			a.First = b.Last + 1
		}
		if a.First <= a.Last {
			out = append(out, a)
		}
	}
	q.ranges = out
	q.units = 0
	for _, r := range out {
		q.units += r.Units()
	}
}

// tail returns up to units tokens from the back of the queue, as sorted
// ranges: the tokens a RETURN gives back first (the latest granted, the
// last to be sold).
func (q *rangeQueue) tail(units uint32) []TokenRange {
	var out []TokenRange
	for i := len(q.ranges) - 1; i >= 0 && units > 0; i-- {
		r := q.ranges[i]
		if r.Units() > units {
			r.First = r.Last - units + 1
		}
		out = append(out, r)
		units -= r.Units()
	}
	return NormalizeRanges(out)
}

// NormalizeRanges sorts rs in place and merges adjacent ranges, returning
// the merged prefix of rs. rs must be disjoint.
func NormalizeRanges(rs []TokenRange) []TokenRange {
	// Insertion sort: the lists are short (bounded by MaxRangesPerRecord).
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && rs[j].First < rs[j-1].First; j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && out[n-1].Last+1 == r.First {
			out[n-1].Last = r.Last
			continue
		}
		out = append(out, r)
	}
	return out
}

// clone returns a copy that shares nothing with q.
func (q *rangeQueue) clone() rangeQueue {
	return rangeQueue{ranges: append([]TokenRange(nil), q.ranges...), units: q.units}
}
