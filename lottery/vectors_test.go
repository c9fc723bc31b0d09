package lottery

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"testing"
)

const vectorsPath = "testdata/vectors.json"

var update = flag.Bool("update", false, "rewrite testdata/vectors.json from the Go implementation")

// vectorFile is the JSON of testdata/vectors.json, read by the Go tests and
// by reference/lottery.py.
type vectorFile struct {
	Comment string   `json:"comment"`
	Vectors []vector `json:"vectors"`
}

type vector struct {
	Name         string        `json:"name"`
	CampaignID   string        `json:"campaign_id"`
	SKUID        string        `json:"sku_id"`
	ServerSeed   string        `json:"server_seed"`
	PseudonymKey string        `json:"pseudonym_key"`
	Randomness   string        `json:"randomness"`
	Units        uint32        `json:"units"`
	Waitlist     uint32        `json:"waitlist"`
	Tiers        []jsonQuota   `json:"tiers"`
	Entries      []vectorEntry `json:"entries"`
	Expect       vectorExpect  `json:"expect"`
}

type jsonQuota struct {
	Tier  uint8 `json:"tier"`
	Quota any   `json:"quota"` // a number or "rest"
}

type vectorEntry struct {
	Seq    uint32 `json:"seq"`
	UserID string `json:"user_id"`
	Tier   uint8  `json:"tier"`
}

type vectorExpect struct {
	Commit      string   `json:"commit"`
	Pool        string   `json:"pool"`
	EntriesRoot string   `json:"entries_root"`
	Seed        string   `json:"seed"`
	Order       []uint32 `json:"order"`
	Winners     []uint32 `json:"winners"`
	Waitlist    []uint32 `json:"waitlist"`
	Lost        []uint32 `json:"lost"`
}

func mustHash(t testing.TB, s string) Hash {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != Size {
		t.Fatalf("bad hash %q", s)
	}
	return Hash(b)
}

func (v vector) rules(t testing.TB) Rules {
	r := Rules{Units: v.Units, Waitlist: v.Waitlist}
	for _, q := range v.Tiers {
		switch n := q.Quota.(type) {
		case string:
			if n != "rest" {
				t.Fatalf("quota %q", n)
			}
			r.Tiers = append(r.Tiers, Quota{Tier: q.Tier, Rest: true})
		case float64:
			r.Tiers = append(r.Tiers, Quota{Tier: q.Tier, Count: uint32(n)})
		default:
			t.Fatalf("quota %v", q.Quota)
		}
	}
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	return r
}

// compute runs the Go implementation over v's inputs.
func (v vector) compute(t testing.TB) vectorExpect {
	serverSeed, key := mustHash(t, v.ServerSeed), mustHash(t, v.PseudonymKey)
	randomness := mustHash(t, v.Randomness)
	var entries []Entry
	var pool []byte
	for _, e := range v.Entries {
		en := Entry{Seq: e.Seq, Pseudonym: Pseudonym(key, e.UserID), Tier: e.Tier}
		entries = append(entries, en)
		pool = AppendLine(pool, en)
	}
	root := EntriesRoot(entries)
	seed := Seed(v.CampaignID, v.SKUID, serverSeed, randomness[:], root)
	var order []uint32
	for _, e := range Rank(seed, entries) {
		order = append(order, e.Seq)
	}
	res := Draw(seed, entries, v.rules(t))
	commit := Commit(serverSeed)
	return vectorExpect{
		Commit: hex.EncodeToString(commit[:]), Pool: string(pool),
		EntriesRoot: hex.EncodeToString(root[:]), Seed: hex.EncodeToString(seed[:]),
		Order: nonNil(order), Winners: nonNil(res.Winners), Waitlist: nonNil(res.Waitlist), Lost: nonNil(res.Lost),
	}
}

func nonNil(s []uint32) []uint32 {
	if s == nil {
		return []uint32{}
	}
	return s
}

func hexOf(label string) string {
	h := sha256.Sum256([]byte(label))
	return hex.EncodeToString(h[:])
}

// goldenInputs are the inputs of the golden vectors.
func goldenInputs() []vector {
	users := func(n int, tier func(i int) uint8) []vectorEntry {
		var es []vectorEntry
		for i := 1; i <= n; i++ {
			es = append(es, vectorEntry{Seq: uint32(i), UserID: fmt.Sprintf("user-%02d", i), Tier: tier(i)})
		}
		return es
	}
	flat := func(int) uint8 { return 0 }
	base := vector{CampaignID: "spring-sale", SKUID: "sku-1",
		ServerSeed: hexOf("server seed"), PseudonymKey: hexOf("pseudonym key"), Randomness: hexOf("beacon randomness")}
	v1 := base
	v1.Name, v1.Units, v1.Waitlist, v1.Entries = "ten entries, three units, waitlist four", 3, 4, users(10, flat)
	v2 := base
	v2.Name, v2.Units, v2.Waitlist = "tiers 2:2, 1:1, 0:rest", 5, 2
	v2.Tiers = []jsonQuota{{2, 2.0}, {1, 1.0}, {0, "rest"}}
	v2.Entries = users(10, func(i int) uint8 { return uint8(i % 3) })
	v3 := base
	v3.Name, v3.Units, v3.Waitlist = "tier 2 quota 4 with one tier-2 entry rolls down", 4, 10
	v3.Tiers = []jsonQuota{{2, 4.0}, {1, 1.0}}
	v3.Entries = users(10, func(i int) uint8 { return map[bool]uint8{true: 2, false: uint8(i % 2)}[i == 7] })
	v4 := base
	v4.Name, v4.Units, v4.Waitlist, v4.Entries = "more units than entries", 20, 5, users(6, flat)
	v5 := base
	v5.Name, v5.Units, v5.Waitlist, v5.Entries = "empty pool", 3, 3, []vectorEntry{}
	v6 := base
	v6.Name, v6.CampaignID, v6.Units, v6.Waitlist, v6.Entries = "other campaign, same inputs", "autumn-sale", 3, 4, users(10, flat)
	return []vector{v1, v2, v3, v4, v5, v6}
}

// TestGoldenVectors checks the Go implementation against the committed
// vectors; -update rewrites them.
func TestGoldenVectors(t *testing.T) {
	if *update {
		f := vectorFile{Comment: "seckill lottery rules v1 (lottery/doc.go); checked by lottery_test and reference/lottery.py"}
		for _, v := range goldenInputs() {
			v.Expect = v.compute(t)
			f.Vectors = append(f.Vectors, v)
		}
		b, err := json.MarshalIndent(f, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(vectorsPath, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := readVectors(t)
	if len(f.Vectors) != len(goldenInputs()) {
		t.Fatalf("%d vectors, want %d", len(f.Vectors), len(goldenInputs()))
	}
	for _, v := range f.Vectors {
		if got := v.compute(t); !reflect.DeepEqual(got, v.Expect) {
			t.Errorf("%s:\n got %+v\nwant %+v", v.Name, got, v.Expect)
		}
	}
	// The first vector is the issue's: 10 entries in a fixed order.
	if got := f.Vectors[0].Expect.Order; len(got) != 10 {
		t.Fatalf("first vector orders %d entries", len(got))
	}
}

func readVectors(t *testing.T) vectorFile {
	t.Helper()
	b, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	var f vectorFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f
}
