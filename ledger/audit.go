package ledger

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/seckill/seckill/actors/sku"
)

type mvccKV = mvccpb.KeyValue

// State is everything the ledger holds for one SKU, read at one etcd
// revision.
type State struct {
	Revision int64                   `json:"revision"`
	Pool     Pool                    `json:"pool"`
	Allocs   map[string][]Allocation `json:"allocations"` // by cell, seq order
	Returns  map[string][]Allocation `json:"returns"`     // by cell, seq order
	// WrittenOff holds the write-offs of lost cells, by cell (writeoff.go).
	WrittenOff map[string]WriteOff `json:"written_off"`
	// Logs holds the cells' log marks, by cell (logmark.go).
	Logs map[string]LogMark `json:"logs"`
}

// Read returns the SKU's ledger state, read in one etcd request (one
// revision). ErrNotFound without a ledger.
func (l *Ledger) Read(ctx context.Context, s SKU) (State, error) {
	resp, err := l.c.Get(ctx, l.skuKey(s)+"/", clientv3.WithPrefix())
	if err != nil {
		return State{}, err
	}
	st := State{Revision: resp.Header.Revision, Allocs: map[string][]Allocation{}, Returns: map[string][]Allocation{}, WrittenOff: map[string]WriteOff{}, Logs: map[string]LogMark{}}
	found := false
	for _, kv := range resp.Kvs {
		rest := strings.TrimPrefix(string(kv.Key), l.skuKey(s)+"/")
		switch {
		case rest == "ledger":
			if st.Pool, _, err = poolOf([]*mvccKV{kv}); err != nil {
				return State{}, err
			}
			found = true
		case strings.HasPrefix(rest, "writeoffs/"):
			w, err := decodeWriteOff(kv.Value)
			if err != nil {
				return State{}, err
			}
			st.WrittenOff[w.Cell] = w
		case strings.HasPrefix(rest, "logs/"):
			m, err := decodeLogMark(kv.Value)
			if err != nil {
				return State{}, err
			}
			st.Logs[m.Cell] = m
		case strings.HasPrefix(rest, "allocs/") || strings.HasPrefix(rest, "returns/"):
			a, err := decodeAllocation(kv.Value)
			if err != nil {
				return State{}, err
			}
			if strings.HasPrefix(rest, "allocs/") {
				st.Allocs[a.Cell] = append(st.Allocs[a.Cell], a)
			} else {
				st.Returns[a.Cell] = append(st.Returns[a.Cell], a)
			}
		}
	}
	if !found {
		return State{}, ErrNotFound
	}
	return st, nil
}

// Cells returns the cells with an allocation or a return, sorted.
func (st State) Cells() []string {
	var out []string
	for c := range st.Allocs {
		out = append(out, c)
	}
	for c := range st.Returns {
		if _, ok := st.Allocs[c]; !ok {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

// Held returns the units cell holds per the ledger: granted - returned.
func (st State) Held(cell string) uint64 {
	var n uint64
	for _, a := range st.Allocs[cell] {
		n += a.Units()
	}
	for _, r := range st.Returns[cell] {
		n -= r.Units()
	}
	return n
}

// MaxCheckedSaleLimit bounds the sale_limit Check walks token by token
// (one byte and two bytes per token).
const MaxCheckedSaleLimit = 1 << 26

// Check verifies the ledger's invariants and returns what breaks (empty
// when healthy; at most sku.MaxViolations):
//   - each token is, at once, never granted (>= next_token), free, or held
//     by exactly one cell (its grants minus its returns hold it once);
//   - a cell returns only tokens it holds;
//   - granted and returned totals match the allocations and returns;
//   - conservation: Σ held + |free| + never granted = sale_limit
//     (written-off cells' holdings count as held: never free again);
//   - a written-off cell holds what its write-off recorded (nothing was
//     granted or credited to it after).
func (st State) Check() []string {
	var bad []string
	fail := func(format string, args ...any) {
		if len(bad) < sku.MaxViolations {
			bad = append(bad, fmt.Sprintf(format, args...))
		}
	}
	p := st.Pool
	if err := p.validate(); err != nil {
		fail("pool: %v", err)
		return bad
	}
	if p.SaleLimit > MaxCheckedSaleLimit {
		fail("sale_limit %d beyond what Check walks", p.SaleLimit)
		return bad
	}
	holds := make([]int8, p.SaleLimit+1)
	var granted, returned, held uint64
	for _, cell := range st.Cells() {
		for _, a := range st.Allocs[cell] {
			granted += a.Units()
		}
		for _, r := range st.Returns[cell] {
			returned += r.Units()
		}
		// A token may go to a cell, come back and go to another: only
		// the net holdings per cell, and their sum per token, count.
		for t, n := range heldOf(st.Allocs[cell], st.Returns[cell]) {
			switch {
			case t == 0 || t > p.SaleLimit:
				fail("cell %s holds token %d outside 1..%d", cell, t, p.SaleLimit)
			case n < 0:
				fail("cell %s returned token %d more often than it was granted it", cell, t)
			case n > 1:
				fail("cell %s was granted token %d %d times", cell, t, n)
			case n == 1 && holds[t] != 0:
				fail("token %d is held by two cells (again by %s)", t, cell)
			case n == 1:
				holds[t] = 1
			}
		}
	}
	for t := uint32(1); t <= p.SaleLimit; t++ {
		free := inFree(p.Free, t)
		switch {
		case t >= p.NextToken && holds[t] != 0:
			fail("token %d is held but was never granted", t)
		case free && holds[t] != 0:
			fail("token %d is free and held", t)
		case t < p.NextToken && !free && holds[t] != 1:
			fail("token %d is granted, not free, but held %d times", t, holds[t])
		}
		if holds[t] == 1 {
			held++
		}
	}
	for cell, w := range st.WrittenOff {
		if h := st.Held(cell); h != w.Units {
			fail("cell %s was written off holding %d, holds %d", cell, w.Units, h)
		}
	}
	if granted != p.Granted || returned != p.Returned {
		fail("pool counts granted %d returned %d, allocations %d returns %d", p.Granted, p.Returned, granted, returned)
	}
	free := sku.RangesUnits(p.Free)
	never := uint64(p.SaleLimit + 1 - p.NextToken)
	if held+free+never != uint64(p.SaleLimit) {
		fail("held %d + free %d + never granted %d != sale_limit %d", held, free, never, p.SaleLimit)
	}
	return bad
}

func inFree(free []sku.TokenRange, t uint32) bool {
	i := sort.Search(len(free), func(i int) bool { return free[i].Last >= t })
	return i < len(free) && free[i].First <= t
}

// holdings is one cell's net holding per token: its grants minus its
// returns.
type holdings map[uint32]int

func heldOf(grants, returns []Allocation) holdings {
	h := holdings{}
	for _, a := range grants {
		for _, r := range a.Ranges {
			for t := r.First; t <= r.Last; t++ {
				h[t]++
			}
		}
	}
	for _, a := range returns {
		for _, r := range a.Ranges {
			for t := r.First; t <= r.Last; t++ {
				h[t]--
			}
		}
	}
	return h
}

// HeldTokens returns the tokens a cell holds by these grants less these
// returns (each granted more often than returned), sorted.
func HeldTokens(grants, returns []Allocation) []uint32 {
	var out []uint32
	for t, n := range heldOf(grants, returns) {
		if n > 0 {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// count returns how many tokens of rs the cell holds.
func (h holdings) count(rs []sku.TokenRange) uint64 {
	var n uint64
	for _, r := range rs {
		for t := r.First; t <= r.Last; t++ {
			if h[t] == 1 {
				n++
			}
		}
	}
	return n
}
