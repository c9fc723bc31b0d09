package lottery

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// MaxTiers bounds the tiers a lottery declares.
const MaxTiers = 16

// Quota is one declared tier: Count units for entries of tier Tier or
// higher, or, with Rest, whatever the earlier tiers left of the units.
type Quota struct {
	Tier  uint8
	Count uint32 // units; unused when Rest
	Rest  bool
}

// Rules are what a draw allocates: Units winners at most (the SKU's
// sale_limit), then up to Waitlist waitlisted entries, by Tiers in declared
// order (empty: one tier 0 with quota "rest").
type Rules struct {
	Units    uint32
	Waitlist uint32
	Tiers    []Quota
}

// ErrBadRules is wrapped by Rules.Validate.
var ErrBadRules = errors.New("invalid lottery rules")

// Validate checks the tiers: at most MaxTiers, distinct, every fixed quota
// at least 1, and "rest" only as the last tier.
func (r Rules) Validate() error {
	if len(r.Tiers) > MaxTiers {
		return fmt.Errorf("%w: at most %d tiers", ErrBadRules, MaxTiers)
	}
	seen := map[uint8]bool{}
	for i, q := range r.Tiers {
		switch {
		case seen[q.Tier]:
			return fmt.Errorf("%w: tier %d declared twice", ErrBadRules, q.Tier)
		case q.Rest && i != len(r.Tiers)-1:
			return fmt.Errorf("%w: quota \"rest\" must be the last tier", ErrBadRules)
		case !q.Rest && q.Count == 0:
			return fmt.Errorf("%w: tier %d has quota 0", ErrBadRules, q.Tier)
		}
		seen[q.Tier] = true
	}
	return nil
}

// tiers returns the declared tiers, or the default single tier.
func (r Rules) tiers() []Quota {
	if len(r.Tiers) == 0 {
		return []Quota{{Tier: 0, Rest: true}}
	}
	return r.Tiers
}

// Rank returns the entries sorted by rank key ascending, ties by seq. The
// input is not changed; its order does not matter.
func Rank(seed Hash, entries []Entry) []Entry {
	type keyed struct {
		key Hash
		e   Entry
	}
	rk := newRanker(seed)
	ks := make([]keyed, len(entries))
	for i, e := range entries {
		ks[i] = keyed{rk.key(e.Seq), e}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if c := bytes.Compare(a.key[:], b.key[:]); c != 0 {
			return c
		}
		return int(int64(a.e.Seq) - int64(b.e.Seq))
	})
	out := make([]Entry, len(ks))
	for i := range ks {
		out[i] = ks[i].e
	}
	return out
}

// Result is a draw's allocation, as entry seqs. Winners and Waitlist are in
// rank order; Lost is every other entry, in rank order.
type Result struct {
	Winners  []uint32
	Waitlist []uint32
	Lost     []uint32
}

// Allocate applies rules to a ranking (as Rank returns it): tier quotas in
// declared order with roll-down, then the waitlist, then lost. rules must
// be valid (Validate).
func Allocate(ranked []Entry, rules Rules) Result {
	chosen := make([]bool, len(ranked))
	left, carry := rules.Units, uint32(0)
	for _, q := range rules.tiers() {
		want := left
		if !q.Rest {
			want = min(left, sat(q.Count, carry))
		}
		got := uint32(0)
		for i := 0; i < len(ranked) && got < want; i++ {
			if !chosen[i] && ranked[i].Tier >= q.Tier {
				chosen[i] = true
				got++
			}
		}
		left -= got
		carry = want - got // unused quota rolls down to the next tier
	}
	var res Result
	for i, e := range ranked {
		switch {
		case chosen[i]:
			res.Winners = append(res.Winners, e.Seq)
		case uint32(len(res.Waitlist)) < rules.Waitlist:
			res.Waitlist = append(res.Waitlist, e.Seq)
		default:
			res.Lost = append(res.Lost, e.Seq)
		}
	}
	return res
}

// sat returns a+b, saturated at the largest uint32.
func sat(a, b uint32) uint32 {
	if s := uint64(a) + uint64(b); s < 1<<32 {
		return uint32(s)
	}
	return 1<<32 - 1
}

// Draw ranks entries with seed and allocates them by rules.
func Draw(seed Hash, entries []Entry, rules Rules) Result {
	return Allocate(Rank(seed, entries), rules)
}

// ListRoot returns SHA-256 over the lines decimal(seq) "\n" of seqs in
// order: the winners_root and waitlist_root of the evidence.
func ListRoot(seqs []uint32) Hash {
	h := sha256.New()
	var buf [11]byte
	for _, s := range seqs {
		h.Write(append(strconv.AppendUint(buf[:0], uint64(s), 10), '\n'))
	}
	var sum Hash
	h.Sum(sum[:0])
	return sum
}
