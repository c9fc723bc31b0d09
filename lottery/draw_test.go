package lottery

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// genDraw draws a pool, a seed and rules.
func genDraw(t *rapid.T) (Hash, []Entry, Rules) {
	n := rapid.IntRange(0, 200).Draw(t, "entries")
	entries := make([]Entry, n)
	for i := range entries {
		entries[i] = Entry{Seq: uint32(i + 1), Tier: uint8(rapid.IntRange(0, 3).Draw(t, "tier"))}
		binary.BigEndian.PutUint32(entries[i].Pseudonym[:], uint32(i+1))
	}
	seed := sha256.Sum256(rapid.SliceOfN(rapid.Byte(), 8, 8).Draw(t, "seed"))
	rules := Rules{Units: uint32(rapid.IntRange(0, 250).Draw(t, "units")), Waitlist: uint32(rapid.IntRange(0, 250).Draw(t, "waitlist"))}
	tiers := rapid.Permutation([]uint8{0, 1, 2, 3}).Draw(t, "tier order")
	k := rapid.IntRange(0, 4).Draw(t, "tiers")
	for i := 0; i < k; i++ {
		q := Quota{Tier: tiers[i], Count: uint32(rapid.IntRange(1, 80).Draw(t, "quota"))}
		q.Rest = i == k-1 && rapid.Bool().Draw(t, "rest")
		rules.Tiers = append(rules.Tiers, q)
	}
	if err := rules.Validate(); err != nil {
		t.Fatal(err)
	}
	return seed, entries, rules
}

// TestRankIsPermutationIndependentOfOrder: the ranking holds every entry
// once, and shuffling the input does not change it.
func TestRankIsPermutationIndependentOfOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		seed, entries, _ := genDraw(t)
		ranked := Rank(seed, entries)
		shuffled := rapid.Permutation(entries).Draw(t, "shuffled")
		if !slices.Equal(Rank(seed, shuffled), ranked) {
			t.Fatal("the ranking depends on the input order")
		}
		seqs := make([]uint32, len(ranked))
		for i, e := range ranked {
			seqs[i] = e.Seq
		}
		slices.Sort(seqs)
		for i, s := range seqs {
			if s != uint32(i+1) {
				t.Fatalf("ranking is not a permutation: %v", seqs)
			}
		}
		for i := 1; i < len(ranked); i++ {
			a, b := RankKey(seed, ranked[i-1].Seq), RankKey(seed, ranked[i].Seq)
			if string(a[:]) > string(b[:]) {
				t.Fatalf("rank keys out of order at %d", i)
			}
		}
	})
}

// TestAllocationProperties: winners + waitlist + lost is the pool, nobody
// is chosen twice, winners never exceed the units, every tier's quota is
// met as far as its eligible entries allow, the waitlist is the best-ranked
// non-winners, and without tiers the winners are the ranking's prefix.
func TestAllocationProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		seed, entries, rules := genDraw(t)
		ranked := Rank(seed, entries)
		res := Allocate(ranked, rules)
		all := slices.Concat(res.Winners, res.Waitlist, res.Lost)
		if len(all) != len(entries) {
			t.Fatalf("winners %d + waitlist %d + lost %d != pool %d", len(res.Winners), len(res.Waitlist), len(res.Lost), len(entries))
		}
		seen := map[uint32]bool{}
		for _, s := range all {
			if seen[s] {
				t.Fatalf("entry %d allocated twice", s)
			}
			seen[s] = true
		}
		if uint32(len(res.Winners)) > rules.Units {
			t.Fatalf("%d winners for %d units", len(res.Winners), rules.Units)
		}
		tier := map[uint32]uint8{}
		pos := map[uint32]int{}
		for i, e := range ranked {
			tier[e.Seq], pos[e.Seq] = e.Tier, i
		}
		// Winners, waitlist and lost are each in rank order; the waitlist
		// is the best-ranked non-winners.
		for _, list := range [][]uint32{res.Winners, res.Waitlist, res.Lost} {
			for i := 1; i < len(list); i++ {
				if pos[list[i-1]] > pos[list[i]] {
					t.Fatal("a list is not in rank order")
				}
			}
		}
		if len(res.Waitlist) > 0 && len(res.Lost) > 0 && pos[res.Waitlist[len(res.Waitlist)-1]] > pos[res.Lost[0]] {
			t.Fatal("a lost entry ranks before a waitlisted one")
		}
		if want := min(int(rules.Waitlist), len(entries)-len(res.Winners)); len(res.Waitlist) != want {
			t.Fatalf("waitlist %d, want %d", len(res.Waitlist), want)
		}
		// The first tier's quota holds: it gets min(quota, units, eligible).
		tiers := rules.tiers()
		q := tiers[0]
		eligible, won := 0, 0
		for _, e := range entries {
			if e.Tier >= q.Tier {
				eligible++
			}
		}
		for _, s := range res.Winners {
			if tier[s] >= q.Tier {
				won++
			}
		}
		want := min(eligible, int(rules.Units))
		if !q.Rest {
			want = min(want, int(q.Count))
		}
		if won < want {
			t.Fatalf("tier %d quota %d: %d of %d eligible won", q.Tier, q.Count, won, eligible)
		}
		// With a tier-0 "rest" last, every unit finds a winner while entries remain.
		if last := tiers[len(tiers)-1]; last.Rest && last.Tier == 0 {
			if want := min(int(rules.Units), len(entries)); len(res.Winners) != want {
				t.Fatalf("%d winners, want %d", len(res.Winners), want)
			}
		}
		if len(rules.Tiers) == 0 {
			for i, s := range res.Winners {
				if ranked[i].Seq != s {
					t.Fatal("without tiers the winners are not the ranking's prefix")
				}
			}
		}
	})
}

// TestTierRollDown: a tier quota its tier cannot fill passes the rest to
// the next tier.
func TestTierRollDown(t *testing.T) {
	var entries []Entry
	for i := uint32(1); i <= 20; i++ {
		tier := uint8(0)
		if i <= 2 {
			tier = 2
		}
		entries = append(entries, Entry{Seq: i, Tier: tier})
	}
	rules := Rules{Units: 10, Tiers: []Quota{{Tier: 2, Count: 5}, {Tier: 0, Count: 5}}}
	res := Draw(Hash{1}, entries, rules)
	if len(res.Winners) != 10 {
		t.Fatalf("%d winners, want 10 (tier 2's unused 3 roll down to tier 0)", len(res.Winners))
	}
	rules.Tiers[1].Count = 2 // tier 0 gets 2 + 3 rolled down = 5, so 7 winners
	if res := Draw(Hash{1}, entries, rules); len(res.Winners) != 7 {
		t.Fatalf("%d winners, want 7", len(res.Winners))
	}
}

func TestRulesValidate(t *testing.T) {
	bad := []Rules{
		{Tiers: []Quota{{Tier: 1, Count: 1}, {Tier: 1, Count: 2}}},
		{Tiers: []Quota{{Tier: 0, Rest: true}, {Tier: 1, Count: 2}}},
		{Tiers: []Quota{{Tier: 1}}},
		{Tiers: make([]Quota, MaxTiers+1)},
	}
	for i, r := range bad {
		if r.Validate() == nil {
			t.Errorf("rules %d: want an error", i)
		}
	}
}

// TestFairness: 2,000 draws of 5 winners from 50 entries with seeds
// SHA-256(i): each entrant's wins are within 5σ of the mean 200
// (binomial, p = 0.1, σ ≈ 13.4).
func TestFairness(t *testing.T) {
	const draws, pool, units = 2000, 50, 5
	entries := make([]Entry, pool)
	for i := range entries {
		entries[i] = Entry{Seq: uint32(i + 1)}
	}
	wins := make([]int, pool+1)
	for d := range draws {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(d))
		res := Draw(sha256.Sum256(b[:]), entries, Rules{Units: units})
		for _, s := range res.Winners {
			wins[s]++
		}
	}
	p := float64(units) / pool
	mean, sigma := draws*p, math.Sqrt(draws*p*(1-p))
	for s := 1; s <= pool; s++ {
		if math.Abs(float64(wins[s])-mean) > 5*sigma {
			t.Errorf("entry %d won %d times, mean %.0f ± 5×%.1f", s, wins[s], mean, sigma)
		}
	}
}
