package lottery

import (
	"crypto/sha256"
	"fmt"
	"slices"

	"github.com/seckill/seckill/internal/timefmt"
)

// Evidence is what a lottery publishes (and what its log records), the
// input of Verify. Times are Unix ms; a zero CommittedAtMs is unknown.
type Evidence struct {
	CampaignID, SKUID string
	SaleLimit         uint32
	WaitlistSize      uint32 // the rules' waitlist
	Tiers             []Quota
	Beacon            Beacon // the round the rules name
	EntriesCloseAtMs  int64

	CommittedAtMs int64
	Commit        Hash
	EntryCount    uint32
	EntriesRoot   Hash
	ClosedAtMs    int64

	Round      uint64 // the round the draw used
	Randomness Hash
	// Signature is the beacon's signature of Round when the draw recorded
	// one (CheckSignature); nil otherwise.
	Signature  []byte
	DrawnAtMs  int64
	ServerSeed Hash
	Seed       Hash

	WinnersRoot  Hash
	WaitlistRoot Hash
	// Winners and Waitlist are the recorded lists (entry seqs in record
	// order) when known, as from a log; nil when only the roots are.
	Winners  []uint32
	Waitlist []uint32
}

// Check is one verdict of Verify.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// Report is the auditor's answer: every check, and OK when all passed.
type Report struct {
	OK      bool    `json:"ok"`
	Entries int     `json:"entries"`
	Winners int     `json:"winners"`
	Checks  []Check `json:"checks"`
}

// Add appends a check and keeps OK up to date.
func (r *Report) Add(name string, ok bool, format string, args ...any) {
	c := Check{Name: name, OK: ok}
	if format != "" {
		c.Detail = fmt.Sprintf(format, args...)
	}
	r.Checks = append(r.Checks, c)
	r.OK = r.OK && ok
}

// Verify recomputes a lottery from its evidence and its exported pool (the
// canonical lines, ParsePool) and checks, in the order of the rules: the
// commitment precedes the close; the beacon round is the named one or its
// fallback and is published after the close, and the draw came at or after
// it, and the entries closed no earlier than entries_close_at; the
// beacon's signature, when recorded, verifies and gives the randomness;
// SHA-256(server_seed) is the commit; the pool hashes to entries_root
// and holds entry_count lines; one entry per pseudonym; the seed follows
// from the inputs; the recomputed winners and waitlist match the recorded
// roots (and lists, when given); the tier quotas hold; no more winners than
// sale_limit. It reads no clock and does no I/O.
func Verify(ev Evidence, pool []byte) Report {
	r := Report{OK: true}
	r.Add("commit_precedes_close", ev.CommittedAtMs == 0 || ev.CommittedAtMs <= ev.ClosedAtMs && ev.CommittedAtMs < ev.EntriesCloseAtMs,
		"committed at %s, closed at %s (entries_close_at %s)", timefmt.Millis(ev.CommittedAtMs), timefmt.Millis(ev.ClosedAtMs), timefmt.Millis(ev.EntriesCloseAtMs))
	roundTime, err := RoundTimeMs(ev.Beacon.Source, ev.Round)
	accepted := ev.Beacon.Accepts(ev.Round)
	r.Add("round_after_close", err == nil && accepted == nil && roundTime > ev.EntriesCloseAtMs && ev.DrawnAtMs >= roundTime && ev.ClosedAtMs >= ev.EntriesCloseAtMs,
		"round %d (named %d, fallback %d) published at %s; entries_close_at %s, closed at %s; drawn at %s",
		ev.Round, ev.Beacon.Round, ev.Beacon.Fallback().Round, timefmt.Millis(roundTime), timefmt.Millis(ev.EntriesCloseAtMs), timefmt.Millis(ev.ClosedAtMs), timefmt.Millis(ev.DrawnAtMs))
	if len(ev.Signature) > 0 {
		err := CheckSignature(ev.Beacon.Source, ev.Round, ev.Randomness, ev.Signature)
		r.Add("beacon_signature", err == nil, "%s", errText(err, "the randomness is SHA-256 of the signature, which verifies under the quicknet public key for the round"))
	} else {
		r.Add("beacon_signature", true, "no signature recorded: the randomness was not checked against the beacon here (compare it with the round on drand's public record)")
	}
	r.Add("seed_matches_commit", Commit(ev.ServerSeed) == ev.Commit, "")
	entries, perr := ParsePool(pool)
	root := sha256.Sum256(pool)
	r.Entries = len(entries)
	r.Add("pool_matches_root", perr == nil && root == ev.EntriesRoot && uint32(len(entries)) == ev.EntryCount,
		"%d lines (entry_count %d), root %x; parse: %v", len(entries), ev.EntryCount, root, perr)
	seen := make(map[Hash]uint32, len(entries))
	dup := ""
	for _, e := range entries {
		if prev, ok := seen[e.Pseudonym]; ok && dup == "" {
			dup = fmt.Sprintf("entries %d and %d share a pseudonym", prev, e.Seq)
		}
		seen[e.Pseudonym] = e.Seq
	}
	r.Add("one_entry_per_pseudonym", dup == "", "%s", dup)
	seed := Seed(ev.CampaignID, ev.SKUID, ev.ServerSeed, ev.Randomness[:], ev.EntriesRoot)
	r.Add("seed_follows", seed == ev.Seed, "")
	rules := Rules{Units: ev.SaleLimit, Waitlist: ev.WaitlistSize, Tiers: ev.Tiers}
	res := Draw(seed, entries, rules)
	r.Winners = len(res.Winners)
	ok := ListRoot(res.Winners) == ev.WinnersRoot && ListRoot(res.Waitlist) == ev.WaitlistRoot
	detail := ""
	if ev.Winners != nil && !slices.Equal(ev.Winners, res.Winners) {
		ok, detail = false, fmt.Sprintf("recorded winners %v, recomputed %v", head(ev.Winners), head(res.Winners))
	}
	if ev.Waitlist != nil && !slices.Equal(ev.Waitlist, res.Waitlist) {
		ok, detail = false, fmt.Sprintf("recorded waitlist %v, recomputed %v", head(ev.Waitlist), head(res.Waitlist))
	}
	r.Add("ranking_matches", ok, "%s", detail)
	r.Add("quotas_hold", quotasHold(entries, res.Winners, rules), "")
	recorded := len(res.Winners)
	if ev.Winners != nil {
		recorded = len(ev.Winners)
	}
	r.Add("within_sale_limit", uint32(recorded) <= ev.SaleLimit, "%d winners, sale_limit %d", recorded, ev.SaleLimit)
	return r
}

// errText returns err's text, or ok when err is nil.
func errText(err error, ok string) string {
	if err != nil {
		return err.Error()
	}
	return ok
}

// head returns the first ten of s, for details.
func head(s []uint32) []uint32 { return s[:min(len(s), 10)] }

// quotasHold checks the tier quotas on a list of winners, independently of
// Allocate: no entry twice, no more than the units, and each fixed quota
// met as far as the entries of its tier or higher, the units and the quota
// rolled down to it allow.
func quotasHold(entries []Entry, winners []uint32, rules Rules) bool {
	if uint32(len(winners)) > rules.Units {
		return false
	}
	tier := make(map[uint32]uint8, len(entries))
	for _, e := range entries {
		tier[e.Seq] = e.Tier
	}
	chosen := map[uint32]bool{}
	for _, s := range winners {
		if _, ok := tier[s]; !ok || chosen[s] {
			return false
		}
		chosen[s] = true
	}
	q := rules.tiers()[0]
	eligible, won := 0, 0
	for _, e := range entries {
		if e.Tier >= q.Tier {
			eligible++
			if chosen[e.Seq] {
				won++
			}
		}
	}
	want := min(eligible, int(rules.Units))
	if !q.Rest {
		want = min(want, int(q.Count))
	}
	return won >= want
}
