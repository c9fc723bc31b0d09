package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/skudir"
	"github.com/seckill/seckill/internal/timefmt"
	"github.com/seckill/seckill/lottery"
	"github.com/seckill/seckill/lottery/lotterytest"
	"github.com/seckill/seckill/wal"
)

// lotteryFixture is a data dir with one drawn lottery SKU (c1/lot: 60
// entries, 10 units, waitlist 5, a winner who cancelled and a promotion),
// its published evidence and its exported pool.
type lotteryFixture struct {
	skuDir   string
	evidence []byte
	pool     []byte
}

func newLotteryFixture(t *testing.T) *lotteryFixture {
	rnd := sha256.Sum256([]byte("round 31"))
	return newLotteryFixtureOf(t, 31, rnd[:], nil)
}

// newLotteryFixtureOf is newLotteryFixture drawn with quicknet round
// round, its randomness and signature (nil: none): the entries open 90 s
// before the round's time and close a minute later.
func newLotteryFixtureOf(t *testing.T, round uint64, rnd, signature []byte) *lotteryFixture {
	t.Helper()
	roundT, err := lottery.RoundTimeMs(lottery.SourceDrandQuicknet, round)
	if err != nil {
		t.Fatal(err)
	}
	lotOpen := roundT - 90_000
	dataDir := t.TempDir()
	var now atomic.Int64
	now.Store(lotOpen - 1000)
	e, err := actors.Open(actors.Config{DataDir: dataDir, Logger: quiet, Clock: func() time.Time { return time.UnixMilli(now.Load()) },
		ExpiryInterval: time.Hour, SnapshotEvery: -1, SnapshotInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(e.Define(ctx, sku.Definition{CampaignID: "c1", SKUID: "lot", StartAt: lotOpen, EndAt: lotOpen + 86_400_000,
		PaymentWindowMs: 600_000, SaleLimit: 10, ReleaseOnClose: true,
		Lottery: &sku.LotteryRules{EntriesOpenAt: lotOpen, EntriesCloseAt: lotOpen + 60_000, Waitlist: 5,
			Beacon: lottery.Beacon{Source: lottery.SourceDrandQuicknet, Round: round},
			Tiers:  []lottery.Quota{{Tier: 0, Rest: true}}}}))
	now.Store(lotOpen)
	for i := 1; i <= 60; i++ {
		now.Add(100)
		_, err := e.Enter(ctx, "c1", "lot", fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i), sku.Holder{})
		must(err)
	}
	now.Store(roundT)
	o, err := e.Draw(ctx, "c1", "lot", round, rnd, signature)
	must(err)
	if o != sku.OutcomeDrawStarted {
		t.Fatal(o)
	}
	var info sku.LotteryInfo
	deadline := time.Now().Add(30 * time.Second)
	for !info.Done {
		if time.Now().After(deadline) {
			t.Fatal("the draw is not recorded")
		}
		e.Tick(time.UnixMilli(now.Load()))
		time.Sleep(5 * time.Millisecond)
		f, err := e.Frozen(ctx, "c1", "lot")
		must(err)
		info, _ = f.LotteryInfo(now.Load())
	}
	// A winner cancels: the first waitlisted entrant is promoted.
	for i := 1; i <= 60; i++ {
		v, err := e.Entry(ctx, "c1", "lot", fmt.Sprintf("r%d", i))
		must(err)
		if v.Status == sku.EntryWon {
			_, err = e.Cancel(ctx, v.Reservation.ReservationID)
			must(err)
			break
		}
	}
	f, err := e.Frozen(ctx, "c1", "lot")
	must(err)
	info, _ = f.LotteryInfo(now.Load())
	var pool bytes.Buffer
	_, err = f.WritePool(&pool)
	must(err)
	must(e.Close())
	return &lotteryFixture{skuDir: filepath.Join(dataDir, "c1", "lot"), evidence: evidenceJSONOf(t, info), pool: pool.Bytes()}
}

// evidenceJSONOf writes info with the field names of the published evidence.
func evidenceJSONOf(t *testing.T, info sku.LotteryInfo) []byte {
	h := func(x lottery.Hash) string { return hex.EncodeToString(x[:]) }
	doc := map[string]any{
		"campaign_id": info.CampaignID, "sku_id": info.SKUID, "phase": info.Phase.String(),
		"rules": map[string]any{"sale_limit": info.SaleLimit, "entries_close_at": timefmt.OptionalMillis(info.Rules.EntriesCloseAt),
			"beacon":   map[string]any{"source": info.Rules.Beacon.Source, "round": info.Rules.Beacon.Round},
			"waitlist": info.Rules.Waitlist, "tiers": []map[string]any{{"tier": 0, "quota": "rest"}}},
		"commit": h(info.Commit), "committed_at": timefmt.OptionalMillis(info.CommittedAt), "entry_count": info.EntryCount,
		"entries_root": h(info.EntriesRoot), "closed_at": timefmt.OptionalMillis(info.ClosedAt), "round": info.Round,
		"randomness": h(info.Randomness), "drawn_at": timefmt.OptionalMillis(info.DrawAt), "server_seed": h(info.ServerSeed),
		"seed": h(info.Seed), "winners_root": h(info.WinnersRoot), "waitlist_root": h(info.WaitlistRoot),
	}
	if len(info.Signature) > 0 {
		doc["signature"] = hex.EncodeToString(info.Signature)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o640); err != nil {
		t.Fatal(err)
	}
	return p
}

// rewriteLog copies the fixture's log into a new SKU dir, passing every
// record through edit (which may change it, drop it (nil) or add some).
func rewriteLog(t *testing.T, skuDir string, edit func(index uint64, r sku.Record) []sku.Record) string {
	t.Helper()
	src, err := readLog(skudir.LogOf(skuDir))
	if err != nil {
		t.Fatal(err)
	}
	var recs []sku.Record
	if err := scan(src, 1, func(index uint64, typ byte, payload []byte) error {
		r, err := sku.DecodeRecord(sku.RecordType(typ), payload)
		if err != nil {
			return err
		}
		recs = append(recs, edit(index, r)...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "c1", "lot")
	l, err := wal.Open(filepath.Join(dir, "wal"), wal.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if _, err := l.Append(byte(recs[i].Type), recs[i].AppendPayload(nil)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func reportOf(t *testing.T, out string) lottery.Report {
	t.Helper()
	var r lottery.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("report %q: %v", out, err)
	}
	return r
}

func TestLotteryVerify(t *testing.T) {
	f := newLotteryFixture(t)
	if r := reportOf(t, wantCode(t, exitOK, "lottery", "verify", f.skuDir)); !r.OK || r.Entries != 60 || r.Winners != 10 {
		t.Fatalf("the honest log: %+v", r)
	}
	ev, pool := writeFile(t, "evidence.json", f.evidence), writeFile(t, "entries.csv", f.pool)
	wantCode(t, exitOK, "lottery", "verify", "--evidence", ev, "--pool", pool)

	t.Run("an edited pool line", func(t *testing.T) {
		p := bytes.Clone(f.pool)
		p[bytes.IndexByte(p, ',')+1] ^= 1
		wantCode(t, exitFailed, "lottery", "verify", "--evidence", ev, "--pool", writeFile(t, "entries.csv", p))
	})
	t.Run("a changed server seed", func(t *testing.T) {
		var doc map[string]any
		json.Unmarshal(f.evidence, &doc)
		s := []byte(doc["server_seed"].(string))
		s[0] = "01"[map[bool]int{true: 1, false: 0}[s[0] == '0']]
		doc["server_seed"] = string(s)
		b, _ := json.Marshal(doc)
		wantCode(t, exitFailed, "lottery", "verify", "--evidence", writeFile(t, "evidence.json", b), "--pool", pool)
	})
	t.Run("two winners swapped", func(t *testing.T) {
		var won []uint64
		rewriteLog(t, f.skuDir, func(index uint64, r sku.Record) []sku.Record {
			if r.Type == sku.RecordWon && !r.Lot.FromWaitlist {
				won = append(won, index)
			}
			return []sku.Record{r}
		})
		var first sku.Record
		dir := rewriteLog(t, f.skuDir, func(index uint64, r sku.Record) []sku.Record {
			switch index {
			case won[0]:
				first = r
				return nil
			case won[1]:
				lot := *first.Lot
				first.Lot, first.Seq, first.Token = &lot, r.Seq+1, r.Token+1
				r.Seq, r.Token = r.Seq-1, r.Token-1
				return []sku.Record{r, first}
			}
			return []sku.Record{r}
		})
		code, out, _ := ctl(t, "lottery", "verify", dir)
		if code != exitFailed || reportOf(t, out).OK {
			t.Fatalf("exit %d: %s", code, out)
		}
	})
	t.Run("an entry recorded after the close", func(t *testing.T) {
		dir := rewriteLog(t, f.skuDir, func(index uint64, r sku.Record) []sku.Record {
			if r.Type == sku.RecordEntriesClosed {
				late := sku.Record{Type: sku.RecordEntered, At: r.At, Seq: r.Lot.Count + 1, RequestID: "late", UserID: "late", Lot: &sku.LotteryFields{}}
				return []sku.Record{r, late}
			}
			return []sku.Record{r}
		})
		code, out, _ := ctl(t, "lottery", "verify", dir)
		r := reportOf(t, out)
		if code != exitFailed || r.OK {
			t.Fatalf("exit %d: %s", code, out)
		}
		for _, c := range r.Checks {
			if c.Name == "no_entry_after_close" && c.OK {
				t.Fatalf("the late entry is not reported: %s", out)
			}
		}
	})
	wantCode(t, exitUsage, "lottery", "verify", "--evidence", ev)
	wantCode(t, exitUsage, "lottery")
}

// A draw given the beacon's signature of a published quicknet round
// (lottery/testdata/beacons.json): the auditor re-checks it from the log
// and from the evidence (beacon_signature); a changed signature in either
// makes it exit 1.
func TestLotteryVerifyBeaconSignature(t *testing.T) {
	q := lotterytest.Load(t).Quicknet
	sig := q.Signature
	rnd := lottery.RandomnessOf(sig)
	f := newLotteryFixtureOf(t, q.Round, rnd[:], sig)
	signatureCheck := func(out string) lottery.Check {
		for _, c := range reportOf(t, out).Checks {
			if c.Name == "beacon_signature" {
				return c
			}
		}
		t.Fatalf("no beacon_signature check: %s", out)
		return lottery.Check{}
	}
	if c := signatureCheck(wantCode(t, exitOK, "lottery", "verify", f.skuDir)); !c.OK || !bytes.Contains([]byte(c.Detail), []byte("verifies")) {
		t.Fatalf("from the log: %+v", c)
	}
	pool := writeFile(t, "entries.csv", f.pool)
	wantCode(t, exitOK, "lottery", "verify", "--evidence", writeFile(t, "evidence.json", f.evidence), "--pool", pool)

	var doc map[string]any
	if err := json.Unmarshal(f.evidence, &doc); err != nil || doc["signature"] != hex.EncodeToString(sig) {
		t.Fatalf("the evidence's signature: %v %v", doc["signature"], err)
	}
	flipped := bytes.Clone(sig)
	flipped[9] ^= 1
	doc["signature"] = hex.EncodeToString(flipped)
	b, _ := json.Marshal(doc)
	code, out, _ := ctl(t, "lottery", "verify", "--evidence", writeFile(t, "evidence.json", b), "--pool", pool)
	if code != exitFailed || signatureCheck(out).OK {
		t.Fatalf("a changed signature in the evidence: exit %d: %s", code, out)
	}
	dir := rewriteLog(t, f.skuDir, func(index uint64, r sku.Record) []sku.Record {
		if r.Type == sku.RecordDrawStarted {
			lot := *r.Lot
			lot.Signature = flipped
			r.Lot = &lot
		}
		return []sku.Record{r}
	})
	code, out, _ = ctl(t, "lottery", "verify", dir)
	if code != exitFailed || signatureCheck(out).OK {
		t.Fatalf("a changed signature in the log: exit %d: %s", code, out)
	}
}

// inspect wal on a lottery: an ENTERED record names its entry, never a
// reservation, and --reservation does not pick it; WON names both; every
// lottery record shows its event's lottery fields (the counts and roots of
// ENTRIES_CLOSED and DRAW_DONE, the draw's round and randomness), the
// committed rules the beacon too.
func TestInspectLotteryRecords(t *testing.T) {
	f := newLotteryFixture(t)
	var wonID string
	counts := map[string]uint32{}
	for _, r := range walRecords(t, wantCode(t, 0, "inspect", "wal", f.skuDir)) {
		if lotteryRecord := slices.Contains(strings.Fields("LOTTERY_COMMITTED ENTERED ENTRIES_CLOSED DRAW_STARTED WON WAITLISTED DRAW_DONE LOTTERY_ENDED"), r.Type); lotteryRecord != (r.Lottery != nil) {
			t.Fatalf("%s shown as %+v", r.Type, r)
		}
		switch r.Type {
		case "ENTERED":
			if r.ReservationID != "" || r.Lottery.EntrySeq == 0 {
				t.Fatalf("ENTERED shown as %+v", r)
			}
		case "WON":
			if r.ReservationID == "" || r.Lottery.EntrySeq == 0 || r.TokenID == 0 || r.ExpireAt == "" {
				t.Fatalf("WON shown as %+v", r)
			}
			if wonID == "" {
				wonID = r.ReservationID
			}
		case "LOTTERY_COMMITTED":
			if r.Lottery.BeaconRound != 31 || r.Lottery.Waitlist == nil || *r.Lottery.Waitlist != 5 || r.Lottery.EntriesCloseAt == "" {
				t.Fatalf("LOTTERY_COMMITTED shown as %+v", r)
			}
		case "DRAW_STARTED":
			if r.Lottery.Round != 31 || len(r.Lottery.Randomness) != 64 {
				t.Fatalf("DRAW_STARTED shown as %+v", r)
			}
		case "WAITLISTED":
			if len(r.Lottery.WaitlistSeqs) != 5 {
				t.Fatalf("WAITLISTED shown as %+v", r)
			}
		case "ENTRIES_CLOSED":
			if r.Lottery.Entries == nil || len(r.Lottery.EntriesRoot) != 64 {
				t.Fatalf("ENTRIES_CLOSED shown as %+v", r)
			}
			counts[r.Type] = *r.Lottery.Entries
		case "DRAW_DONE":
			if r.Lottery.Winners == nil || len(r.Lottery.WinnersRoot) != 64 {
				t.Fatalf("DRAW_DONE shown as %+v", r)
			}
			counts[r.Type] = *r.Lottery.Winners
		}
	}
	if counts["ENTRIES_CLOSED"] != 60 || counts["DRAW_DONE"] != 10 {
		t.Fatalf("counts %v", counts)
	}
	var winner string
	for _, r := range walRecords(t, wantCode(t, 0, "inspect", "wal", f.skuDir, "--reservation", wonID)) {
		if r.Type == "ENTERED" {
			t.Fatalf("--reservation %s picked an entry: %+v", wonID, r)
		}
		if r.Type == "WON" {
			winner = fmt.Sprint(r.Lottery.EntrySeq)
		}
	}
	// --user finds a winner's entry and the reservation it won.
	var user string
	for _, r := range walRecords(t, wantCode(t, 0, "inspect", "wal", f.skuDir)) {
		if r.Type == "ENTERED" && fmt.Sprint(r.Lottery.EntrySeq) == winner {
			user = r.UserID
		}
	}
	types := map[string]bool{}
	for _, r := range walRecords(t, wantCode(t, 0, "inspect", "wal", f.skuDir, "--user", user)) {
		types[r.Type] = true
		if r.Type == "WON" && r.ReservationID != wonID {
			t.Fatalf("--user %s: %+v", user, r)
		}
	}
	if !types["ENTERED"] || !types["WON"] {
		t.Fatalf("--user %s of a winner found %v", user, types)
	}
}

// lottery verify on a lottery that ended undrawn says so (exit 1: there
// is no draw to verify).
func TestLotteryVerifyEndedUndrawn(t *testing.T) {
	roundT, _ := lottery.RoundTimeMs(lottery.SourceDrandQuicknet, 31)
	open := roundT - 90_000
	dataDir := t.TempDir()
	var now atomic.Int64
	now.Store(open)
	e, err := actors.Open(actors.Config{DataDir: dataDir, Logger: quiet, Clock: func() time.Time { return time.UnixMilli(now.Load()) },
		ExpiryInterval: time.Hour, SnapshotEvery: -1, SnapshotInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d := sku.Definition{CampaignID: "c1", SKUID: "lot", StartAt: open, EndAt: roundT + 1000, PaymentWindowMs: 60_000, SaleLimit: 5,
		ReleaseOnClose: true, Lottery: &sku.LotteryRules{EntriesOpenAt: open, EntriesCloseAt: open + 60_000,
			Beacon: lottery.Beacon{Source: lottery.SourceDrandQuicknet, Round: 31}}}
	if err := e.Define(ctx, d); err != nil {
		t.Fatal(err)
	}
	if res, err := e.Enter(ctx, "c1", "lot", "r1", "u1", sku.Holder{}); err != nil || res.Outcome != sku.OutcomeEntered {
		t.Fatalf("enter: %+v %v", res, err)
	}
	now.Store(d.EndAt)
	rnd := sha256.Sum256([]byte("late"))
	if o, err := e.Draw(ctx, "c1", "lot", 31, rnd[:], nil); err != nil || o != sku.OutcomeEnded {
		t.Fatalf("a late draw: %s %v", o, err)
	}
	e.Close()
	_, out, errOut := ctl(t, "lottery", "verify", filepath.Join(dataDir, "c1", "lot"))
	if !strings.Contains(out+errOut, "ended undrawn") {
		t.Fatalf("lottery verify of an undrawn lottery: %s %s", out, errOut)
	}
	wantCode(t, exitFailed, "lottery", "verify", filepath.Join(dataDir, "c1", "lot"))
	// The published evidence of an ENDED lottery says the same.
	ev := writeFile(t, "evidence.json", []byte(`{"campaign_id":"c1","sku_id":"lot","phase":"ENDED","ended_at":"2023-08-23T15:10:58Z"}`))
	_, out, errOut = ctl(t, "lottery", "verify", "--evidence", ev, "--pool", writeFile(t, "entries.csv", nil))
	if !strings.Contains(out+errOut, "ended undrawn") {
		t.Fatalf("lottery verify of an ENDED lottery's evidence: %s %s", out, errOut)
	}
}
