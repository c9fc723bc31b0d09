package sku

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestIndexAgainstMap checks the open-addressing index against a Go map
// under random inserts and removals, with few distinct keys so probe runs
// wrap and shift.
func TestIndexAgainstMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var tb table
		x := newIndex(&tb, keyUserID)
		x.doublingSlots = rapid.SampledFrom([]int{0, 2048, indexDoublingSlots}).Draw(t, "doublingSlots")
		want := map[string]uint32{}
		n := rapid.IntRange(1, 6000).Draw(t, "n")
		keys := rapid.IntRange(1, 4000).Draw(t, "keys")
		for i := 0; i < n; i++ {
			key := fmt.Sprintf("u%d", rapid.IntRange(0, keys).Draw(t, "key"))
			if seq, ok := want[key]; ok && rapid.Bool().Draw(t, "remove") {
				x.remove(key, seq)
				delete(want, key)
			} else if !ok {
				seq := tb.add(reservation{}, "r"+key, key, 0)
				x.insert(key, seq)
				want[key] = seq
			}
			// Look up as we go: most steps fall while a growth is moving.
			probe := fmt.Sprintf("u%d", rapid.IntRange(0, keys).Draw(t, "probe"))
			got, ok := x.get(probe)
			if seq, present := want[probe]; ok != present || (present && got != seq) {
				t.Fatalf("step %d: get(%s) = %d %v, want %d %v", i, probe, got, ok, seq, present)
			}
		}
		if x.len() != len(want) {
			t.Fatalf("len %d, want %d", x.len(), len(want))
		}
		for key, seq := range want {
			if got, ok := x.get(key); !ok || got != seq {
				t.Fatalf("get(%s) = %d %v, want %d", key, got, ok, seq)
			}
		}
		for i := 0; i < 50; i++ {
			key := fmt.Sprintf("absent%d", i)
			if _, ok := x.get(key); ok {
				t.Fatalf("found absent key %s", key)
			}
		}
	})
}

func TestValidIDRefusesDotFolders(t *testing.T) {
	for _, id := range []string{".", "..", "", "a/b", "a~b", string(make([]byte, MaxIDLength+1))} {
		if ValidID(id) {
			t.Errorf("ValidID(%q) = true", id)
		}
	}
	for _, id := range []string{"...", ".a", "a.", "demo", "sku-1", "u:1_2.3"} {
		if !ValidID(id) {
			t.Errorf("ValidID(%q) = false", id)
		}
	}
}

// IDRule words ValidID: its length is MaxIDLength and it names the dot
// folders, which is why "." and ".." are refused; Validate uses it.
func TestIDRuleWordsValidID(t *testing.T) {
	if !strings.HasPrefix(IDRule, fmt.Sprintf("1-%d characters of ", MaxIDLength)) || !strings.HasSuffix(IDRule, `not "." or ".."`) {
		t.Fatalf("IDRule = %q", IDRule)
	}
	err := Definition{CampaignID: "..", SKUID: "s", EndAt: 1, PaymentWindowMs: 1, SaleLimit: 1}.Validate()
	if want := `campaign_id ".." must be ` + IDRule; err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("Validate: %v, want ...%s", err, want)
	}
}

// BenchmarkIndexInsert inserts b.N keys and reports the slowest single
// insert: with incremental growth no insert rehashes the whole table.
func BenchmarkIndexInsert(b *testing.B) {
	var tb table
	x := newIndex(&tb, keyUserID)
	keys := make([]string, b.N)
	seqs := make([]uint32, b.N)
	for i := range keys {
		keys[i] = fmt.Sprintf("user-%d", i)
		seqs[i] = tb.add(reservation{}, "r"+keys[i], keys[i], 0)
	}
	var slowest time.Duration
	b.ResetTimer()
	for i := range keys {
		start := time.Now()
		x.insert(keys[i], seqs[i])
		if d := time.Since(start); d > slowest {
			slowest = d
		}
	}
	b.ReportMetric(float64(slowest.Microseconds()), "slowest-µs")
}

// TestValidIDAlphabet checks ValidID's table against its alphabet,
// [A-Za-z0-9._:-], for every byte, at each end and inside an id.
func TestValidIDAlphabet(t *testing.T) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-"
	for c := 0; c < 256; c++ {
		want := strings.IndexByte(alphabet, byte(c)) >= 0
		for _, id := range []string{string([]byte{byte(c), 'a'}), string([]byte{'a', byte(c)}), string([]byte{'a', byte(c), 'b'})} {
			if got := ValidID(id); got != want {
				t.Errorf("ValidID(%q) = %v, want %v", id, got, want)
			}
		}
	}
}

// TestIndexGrowthAgainstMap checks the index against a Go map across its
// growths: inserts first, up to a growth's start (the table then holds
// every seq up to its largest, so it moves in seq order), then inserts
// and removals mixed, so removals fall while a move in either order is
// under way, of entries it moved and of entries it did not yet.
func TestIndexGrowthAgainstMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var tb table
		x := newIndex(&tb, keyUserID)
		x.doublingSlots = rapid.SampledFrom([]int{0, 2048, indexDoublingSlots}).Draw(t, "doublingSlots")
		want := map[string]uint32{}
		var present []string
		check := func(step int, key string) {
			got, ok := x.get(key)
			if seq, in := want[key]; ok != in || (in && got != seq) {
				t.Fatalf("step %d: get(%s) = %d %v, want %d %v", step, key, got, ok, seq, in)
			}
		}
		insert := func(step int) {
			key := fmt.Sprintf("u%d", tb.count)
			seq := tb.add(reservation{}, "r"+key, key, 0)
			x.insert(key, seq)
			want[key] = seq
			present = append(present, key)
			check(step, key)
		}
		// Inserts up to a growth's start and a few more: the removals
		// that follow fall within its move.
		first := 0
		for growths := rapid.IntRange(1, 3).Draw(t, "growths"); growths > 0; growths-- {
			for grown := false; !grown; first++ {
				moving := len(x.old.tags) != 0
				insert(first)
				grown = !moving && len(x.old.tags) != 0
			}
		}
		for range rapid.IntRange(0, 20).Draw(t, "more") {
			insert(first)
			first++
		}
		removeOneIn := rapid.IntRange(2, 20).Draw(t, "removeOneIn")
		for i := range rapid.IntRange(0, 4000).Draw(t, "mixed") {
			if len(present) > 0 && rapid.IntRange(1, removeOneIn).Draw(t, "op") == 1 {
				j := rapid.IntRange(0, len(present)-1).Draw(t, "victim")
				key := present[j]
				present[j] = present[len(present)-1]
				present = present[:len(present)-1]
				x.remove(key, want[key])
				delete(want, key)
				check(first+i, key)
			} else {
				insert(first + i)
			}
			check(first+i, fmt.Sprintf("u%d", rapid.IntRange(0, int(tb.count)).Draw(t, "probe")))
		}
		if x.len() != len(want) {
			t.Fatalf("len %d, want %d", x.len(), len(want))
		}
		for key, seq := range want {
			if got, ok := x.get(key); !ok || got != seq {
				t.Fatalf("get(%s) = %d %v, want %d", key, got, ok, seq)
			}
		}
	})
}

// A SKU's first sale_limit reserves move no index entry: both indexes are
// sized for them when it is defined, so the sale's busiest seconds pay
// no growth (Machine.sizeIndexes, index.presize).
func TestDefinedSKUsIndexesHoldItsSaleLimit(t *testing.T) {
	const limit = 10_000
	m := New()
	d := Definition{CampaignID: "c", SKUID: "s", StartAt: 0, EndAt: 1 << 50,
		PaymentWindowMs: 3_600_000, SaleLimit: limit}
	if _, _, err := m.Define(1, d, nil); err != nil {
		t.Fatal(err)
	}
	slots := [2]int{len(m.byRequest.cur.tags), len(m.live.cur.tags)}
	for _, n := range slots {
		// A size a table grown from empty passes through, so its later
		// growths (and bytes per entry) are those of one that grew.
		if n < indexMinSlots || n%indexMinSlots != 0 || n&(n-1) != 0 {
			t.Fatalf("slots %v: not indexMinSlots doubled", slots)
		}
	}
	var out []Record
	for i := range limit {
		var res Result
		res, out = m.Reserve(2, "r"+strconv.Itoa(i), "u"+strconv.Itoa(i), out[:0])
		if res.Outcome != OutcomeAccepted {
			t.Fatalf("reserve %d: %v", i, res.Outcome)
		}
		for _, x := range []*index{&m.byRequest, &m.live} {
			if len(x.old.tags) != 0 {
				t.Fatalf("reserve %d: an index grew (from %d slots)", i, slots)
			}
		}
	}
	if got := [2]int{len(m.byRequest.cur.tags), len(m.live.cur.tags)}; got != slots {
		t.Fatalf("slots %v after %d reserves, %v when defined", got, limit, slots)
	}
}
