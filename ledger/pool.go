package ledger

import (
	"fmt"

	"github.com/seckill/seckill/actors/sku"
)

// Pool is the central part of one SKU's quota ledger: what no cell holds.
// Tokens 1..sale_limit are, at any moment, in exactly one of: never granted
// (NextToken..SaleLimit), Free (granted once and returned since), or held
// by one cell (an allocation not returned). Granted and Returned count
// units over the ledger's life.
//
// Stored as JSON at <prefix>/campaigns/<c>/skus/<s>/ledger.
type Pool struct {
	SaleLimit uint32           `json:"sale_limit"`
	Chunk     uint32           `json:"chunk"`      // units of one top-up
	NextToken uint32           `json:"next_token"` // lowest token never granted; SaleLimit+1 when all were
	Free      []sku.TokenRange `json:"free"`       // returned tokens, sorted, disjoint
	Granted   uint64           `json:"granted"`
	Returned  uint64           `json:"returned"`
}

// NewPool returns the pool of a SKU nothing was granted from yet.
func NewPool(saleLimit, chunk uint32) Pool {
	return Pool{SaleLimit: saleLimit, Chunk: chunk, NextToken: 1, Free: []sku.TokenRange{}}
}

// Unallocated returns the units a grant may still take: free plus never
// granted.
func (p Pool) Unallocated() uint64 {
	return sku.RangesUnits(p.Free) + uint64(p.SaleLimit+1-p.NextToken)
}

// take returns the pool after granting up to units tokens, and their
// ranges (sorted): free ones first, lowest first, then never-granted ones.
// No ranges when the pool is empty.
func (p Pool) take(units uint32) (Pool, []sku.TokenRange) {
	var out []sku.TokenRange
	free := append([]sku.TokenRange(nil), p.Free...)
	for units > 0 && len(free) > 0 && len(out) < sku.MaxRangesPerRecord-1 {
		r := free[0]
		if r.Units() > units {
			r.Last = r.First + units - 1
			free[0].First = r.Last + 1
		} else {
			free = free[1:]
		}
		out = append(out, r)
		units -= r.Units()
	}
	if n := min(units, p.SaleLimit+1-p.NextToken); n > 0 {
		out = append(out, sku.TokenRange{First: p.NextToken, Last: p.NextToken + n - 1})
		p.NextToken += n
	}
	p.Free = free
	if p.Free == nil {
		p.Free = []sku.TokenRange{}
	}
	out = sku.NormalizeRanges(out)
	p.Granted += sku.RangesUnits(out)
	return p, out
}

// credit returns the pool after the ranges rs (sorted, disjoint, held by a
// cell) came back.
func (p Pool) credit(rs []sku.TokenRange) Pool {
	p.Free = sku.NormalizeRanges(append(append([]sku.TokenRange(nil), p.Free...), rs...))
	p.Returned += sku.RangesUnits(rs)
	return p
}

// validate reports why p is not a pool a ledger could hold.
func (p Pool) validate() error {
	switch {
	case p.SaleLimit == 0 || p.SaleLimit > sku.MaxSaleLimit:
		return fmt.Errorf("sale_limit %d", p.SaleLimit)
	case p.NextToken == 0 || p.NextToken > p.SaleLimit+1:
		return fmt.Errorf("next_token %d outside 1..%d", p.NextToken, p.SaleLimit+1)
	case p.Chunk == 0:
		return fmt.Errorf("chunk 0")
	}
	for i, r := range p.Free {
		if r.First == 0 || r.First > r.Last || r.Last >= p.NextToken || (i > 0 && p.Free[i-1].Last >= r.First) {
			return fmt.Errorf("free range %s", r)
		}
	}
	return nil
}
