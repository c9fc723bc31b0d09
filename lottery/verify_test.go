package lottery

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"testing"

	"github.com/seckill/seckill/lottery/lotterytest"
)

// evidenceOf builds honest evidence for a pool of n entries.
func honestEvidence(n int) (Evidence, []byte) {
	key := sha256.Sum256([]byte("k"))
	var entries []Entry
	var pool []byte
	for i := 1; i <= n; i++ {
		e := Entry{Seq: uint32(i), Pseudonym: Pseudonym(key, fmt.Sprintf("u%d", i)), Tier: uint8(i % 2)}
		entries = append(entries, e)
		pool = AppendLine(pool, e)
	}
	ev := Evidence{CampaignID: "c", SKUID: "s", SaleLimit: 5, WaitlistSize: 4,
		Tiers:  []Quota{{Tier: 1, Count: 2}, {Tier: 0, Rest: true}},
		Beacon: Beacon{Source: SourceDrandQuicknet, Round: 100}, EntriesCloseAtMs: QuicknetGenesis * 1000,
		CommittedAtMs: QuicknetGenesis*1000 - 5000, ServerSeed: sha256.Sum256([]byte("seed")),
		EntryCount: uint32(n), EntriesRoot: EntriesRoot(entries), ClosedAtMs: QuicknetGenesis * 1000,
		Round: 100, Randomness: sha256.Sum256([]byte("r")), DrawnAtMs: (QuicknetGenesis + 300) * 1000}
	ev.Commit = Commit(ev.ServerSeed)
	ev.Seed = Seed("c", "s", ev.ServerSeed, ev.Randomness[:], ev.EntriesRoot)
	res := Draw(ev.Seed, entries, Rules{Units: 5, Waitlist: 4, Tiers: ev.Tiers})
	ev.WinnersRoot, ev.WaitlistRoot = ListRoot(res.Winners), ListRoot(res.Waitlist)
	ev.Winners, ev.Waitlist = res.Winners, res.Waitlist
	return ev, pool
}

func failed(r Report) []string {
	var out []string
	for _, c := range r.Checks {
		if !c.OK {
			out = append(out, c.Name)
		}
	}
	return out
}

func TestVerifyHonestAndTampered(t *testing.T) {
	ev, pool := honestEvidence(40)
	if r := Verify(ev, pool); !r.OK {
		t.Fatalf("honest evidence fails: %v %+v", failed(r), r.Checks)
	}
	cases := map[string]func(ev *Evidence, pool []byte) []byte{
		"an edited pool line": func(ev *Evidence, pool []byte) []byte {
			p := append([]byte(nil), pool...)
			p[len("1,")] ^= 1 // a digit of the first pseudonym
			return p
		},
		"a changed server seed": func(ev *Evidence, pool []byte) []byte { ev.ServerSeed[0] ^= 1; return pool },
		"two winners swapped": func(ev *Evidence, pool []byte) []byte {
			w := append([]uint32(nil), ev.Winners...)
			w[0], w[1] = w[1], w[0]
			ev.Winners = w
			return pool
		},
		"a round before the close": func(ev *Evidence, pool []byte) []byte {
			ev.Round, ev.Beacon.Round = 1, 1
			return pool
		},
		"committed after the close": func(ev *Evidence, pool []byte) []byte { ev.CommittedAtMs = ev.ClosedAtMs + 1; return pool },
		"an entry dropped":          func(ev *Evidence, pool []byte) []byte { return pool[:len(pool)-MaxLineSize+5] },
		"another randomness":        func(ev *Evidence, pool []byte) []byte { ev.Randomness[3] ^= 1; return pool },
	}
	for name, tamper := range cases {
		ev, pool := honestEvidence(40)
		p := tamper(&ev, pool)
		if r := Verify(ev, p); r.OK {
			t.Errorf("%s: the auditor passes it", name)
		} else {
			t.Logf("%s: fails %v", name, failed(r))
		}
	}
}

// signedEvidence is honest evidence of a draw that used quicknet round
// the quicknet round of testdata/beacons.json with its published signature.
func signedEvidence(t *testing.T, n int) (Evidence, []byte) {
	ev, pool := honestEvidence(n)
	v := lotterytest.Load(t)
	roundMs := (QuicknetGenesis + int64(v.Quicknet.Round-1)*QuicknetPeriod) * 1000
	ev.Beacon.Round, ev.Round = v.Quicknet.Round, v.Quicknet.Round
	ev.EntriesCloseAtMs, ev.ClosedAtMs, ev.CommittedAtMs, ev.DrawnAtMs = roundMs-60_000, roundMs-60_000, roundMs-120_000, roundMs
	ev.Signature = v.Quicknet.Signature
	ev.Randomness = RandomnessOf(ev.Signature)
	ev.Seed = Seed("c", "s", ev.ServerSeed, ev.Randomness[:], ev.EntriesRoot)
	entries, _ := ParsePool(pool)
	res := Draw(ev.Seed, entries, Rules{Units: 5, Waitlist: 4, Tiers: ev.Tiers})
	ev.WinnersRoot, ev.WaitlistRoot = ListRoot(res.Winners), ListRoot(res.Waitlist)
	ev.Winners, ev.Waitlist = res.Winners, res.Waitlist
	return ev, pool
}

// A recorded beacon signature is re-checked: a real round passes; a
// changed signature, or one of another round, fails beacon_signature.
func TestVerifyBeaconSignature(t *testing.T) {
	ev, pool := signedEvidence(t, 30)
	if r := Verify(ev, pool); !r.OK {
		t.Fatalf("a draw on a published round fails: %v %+v", failed(r), r.Checks)
	}
	for name, tamper := range map[string]func(ev *Evidence){
		"a flipped signature bit": func(ev *Evidence) {
			ev.Signature = append([]byte(nil), ev.Signature...)
			ev.Signature[5] ^= 1
		},
		"randomness not of the signature": func(ev *Evidence) { ev.Randomness[0] ^= 1 },
		"another chain's signature":       func(ev *Evidence) { ev.Signature = lotterytest.Load(t).Walkthrough.Signature },
	} {
		ev, pool := signedEvidence(t, 30)
		tamper(&ev)
		r := Verify(ev, pool)
		if r.OK || !slices.Contains(failed(r), "beacon_signature") {
			t.Errorf("%s: failed checks %v, want beacon_signature among them", name, failed(r))
		}
	}
}
