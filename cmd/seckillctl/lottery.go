package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/skudir"
	"github.com/seckill/seckill/internal/timefmt"
	"github.com/seckill/seckill/lottery"
)

// runLottery is `seckillctl lottery verify`: the auditor of a lottery sale.
//
//	seckillctl lottery verify DIR
//	seckillctl lottery verify --evidence EVIDENCE.json --pool ENTRIES.csv
//
// With DIR (a SKU directory) it reads the log's records one by one, with
// no help from the engine's replay, rebuilds the pool and the draw, and
// runs lottery.Verify and the checks only a log allows (no entry after the
// close, the recorded winners in rank order, promotions in waitlist order,
// tokens within sale_limit, the state replays and audits clean). With
// --evidence (the JSON of GET /v1/campaigns/{c}/skus/{s}/lottery after the
// draw) and --pool (the admin export entries.csv) it runs lottery.Verify.
// It prints a JSON report and exits 0 when every check passes, 1 otherwise.
func runLottery(args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "verify" {
		return usageError("lottery: want `lottery verify DIR` or `lottery verify --evidence FILE --pool FILE`")
	}
	fs := flag.NewFlagSet("lottery verify", flag.ContinueOnError)
	evidencePath := fs.String("evidence", "", "the published evidence (JSON of GET .../lottery)")
	poolPath := fs.String("pool", "", "the exported pool (entries.csv)")
	want := 1
	if hasFlag(args[1:], "evidence") {
		want = 0
	}
	pos, err := parse(fs, args[1:], want)
	if err != nil {
		return err
	}
	var rep lottery.Report
	if want == 1 {
		rep, err = verifyLotteryDir(skudir.FromPath(pos[0]).String())
	} else {
		if *poolPath == "" {
			return usageError("lottery verify: --evidence needs --pool")
		}
		rep, err = verifyEvidence(*evidencePath, *poolPath)
	}
	if err != nil {
		return err
	}
	if err := writeJSON(stdout, rep); err != nil {
		return err
	}
	if !rep.OK {
		var names []string
		for _, c := range rep.Checks {
			if !c.OK {
				names = append(names, c.Name)
			}
		}
		return &checkFailed{msg: fmt.Sprintf("lottery verify: failed checks: %v", names)}
	}
	return nil
}

// hasFlag reports whether args name the flag -name or --name.
func hasFlag(args []string, name string) bool {
	for _, a := range args {
		for _, p := range []string{"-", "--"} {
			if a == p+name || len(a) > len(p+name) && a[:len(p+name)+1] == p+name+"=" {
				return true
			}
		}
	}
	return false
}

// lotteryLog is what the records of a lottery SKU's log say.
type lotteryLog struct {
	def            sku.Definition
	rules          *sku.LotteryRules
	committedIndex uint64
	committedAt    int64
	entries        []lottery.Entry
	pool           []byte
	late           []string // entries recorded after the close
	closed         bool
	closeIndex     uint64
	close          sku.Record
	drawn          bool
	draw           sku.Record
	winners        []uint32 // WON of the draw, in record order
	promoted       []uint32 // WON from the waitlist, in record order
	tokens         []uint32
	waitlist       []uint32
	done           *sku.Record
	ended          *sku.Record // LOTTERY_ENDED, if any
	afterEnd       []string    // draw records after LOTTERY_ENDED
	problems       []string
}

// readLotteryLog walks the log records of skuDir from record 1.
func readLotteryLog(skuDir string) (*lotteryLog, error) {
	log, err := readLog(skudir.LogOf(skuDir))
	if err != nil {
		return nil, err
	}
	if first := log.FirstIndex(); first > 1 {
		return nil, fmt.Errorf("%s: the log starts at record %d (a snapshot truncated it): verify the published evidence and the exported pool instead (--evidence, --pool)", skuDir, first)
	}
	l := &lotteryLog{}
	err = scan(log, 1, func(index uint64, typ byte, payload []byte) error {
		r, err := sku.DecodeRecord(sku.RecordType(typ), payload)
		if err != nil {
			return fmt.Errorf("record %d: %w", index, err)
		}
		l.add(index, &r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if l.rules == nil {
		return nil, &checkFailed{msg: skuDir + ": not a lottery SKU (no LOTTERY_COMMITTED record)"}
	}
	return l, nil
}

func (l *lotteryLog) add(index uint64, r *sku.Record) {
	if l.ended != nil && (r.Type == sku.RecordDrawStarted || r.Type == sku.RecordWon || r.Type == sku.RecordWaitlisted || r.Type == sku.RecordDrawDone) {
		l.afterEnd = append(l.afterEnd, fmt.Sprintf("record %d: %s", index, r.Type))
	}
	switch r.Type {
	case sku.RecordDefine:
		if l.def.CampaignID == "" {
			l.def = r.Def
		}
		l.def.SaleLimit = r.Def.SaleLimit
	case sku.RecordLotteryCommitted:
		l.rules, l.committedIndex, l.committedAt = r.Def.Lottery, index, r.At
	case sku.RecordEntered:
		if l.rules == nil {
			l.problems = append(l.problems, fmt.Sprintf("record %d: an entry before the commitment", index))
			return
		}
		if l.closed || r.At >= l.rules.EntriesCloseAt || r.At < l.rules.EntriesOpenAt {
			l.late = append(l.late, fmt.Sprintf("record %d: entry %d at %d ms", index, r.Seq, r.At))
		}
		e := lottery.Entry{Seq: r.Seq, Pseudonym: lottery.Pseudonym(l.rules.PseudonymKey, r.UserID), Tier: r.Holder.Tier}
		l.entries = append(l.entries, e)
		if !l.closed {
			l.pool = lottery.AppendLine(l.pool, e)
		}
	case sku.RecordEntriesClosed:
		l.closed, l.closeIndex, l.close = true, index, *r
	case sku.RecordDrawStarted:
		l.drawn, l.draw = true, *r
	case sku.RecordWon:
		if r.Lot.FromWaitlist {
			l.promoted = append(l.promoted, r.Lot.EntrySeq)
		} else {
			l.winners = append(l.winners, r.Lot.EntrySeq)
		}
		l.tokens = append(l.tokens, r.Token)
	case sku.RecordWaitlisted:
		l.waitlist = append(l.waitlist, r.Lot.Seqs...)
	case sku.RecordDrawDone:
		rec := *r
		l.done = &rec
	case sku.RecordLotteryEnded:
		rec := *r
		l.ended = &rec
	}
}

// verifyLotteryDir audits a lottery SKU from its log.
func verifyLotteryDir(skuDir string) (lottery.Report, error) {
	l, err := readLotteryLog(skuDir)
	if err != nil {
		return lottery.Report{}, err
	}
	if !l.drawn && l.ended != nil {
		return lottery.Report{}, &checkFailed{msg: fmt.Sprintf("%s: the lottery ended undrawn at %s (LOTTERY_ENDED): every entry lost, there is no draw to verify",
			skuDir, timefmt.OptionalMillis(l.ended.At))}
	}
	if !l.drawn || l.done == nil {
		return lottery.Report{}, &checkFailed{msg: skuDir + ": the lottery is not drawn yet (no DRAW_DONE record)"}
	}
	ev := lottery.Evidence{CampaignID: l.def.CampaignID, SKUID: l.def.SKUID, SaleLimit: l.def.SaleLimit,
		WaitlistSize: l.rules.Waitlist, Tiers: l.rules.Tiers, Beacon: l.rules.Beacon, EntriesCloseAtMs: l.rules.EntriesCloseAt,
		CommittedAtMs: l.committedAt, Commit: lottery.Commit(l.rules.ServerSeed),
		EntryCount: l.close.Lot.Count, EntriesRoot: l.close.Lot.Root, ClosedAtMs: l.close.At,
		Round: l.draw.Lot.Round, Randomness: l.draw.Lot.Randomness, Signature: l.draw.Lot.Signature, DrawnAtMs: l.draw.At, ServerSeed: l.rules.ServerSeed,
		WinnersRoot: l.done.Lot.Root, WaitlistRoot: l.done.Lot.WaitlistRoot,
		Winners: nonNil(l.winners), Waitlist: nonNil(l.waitlist)}
	ev.Seed = lottery.Seed(ev.CampaignID, ev.SKUID, ev.ServerSeed, ev.Randomness[:], ev.EntriesRoot)
	rep := lottery.Verify(ev, l.pool)
	rep.Add("commit_recorded_before_close", l.committedIndex < l.closeIndex, "LOTTERY_COMMITTED is record %d, ENTRIES_CLOSED record %d", l.committedIndex, l.closeIndex)
	rep.Add("no_entry_after_close", len(l.late) == 0 && len(l.problems) == 0, "%s", strings.Join(append(l.late, l.problems...), "; "))
	inOrder := true
	for i, e := range l.entries {
		inOrder = inOrder && e.Seq == uint32(i+1)
	}
	rep.Add("entry_seqs_in_order", inOrder, "")
	rep.Add("nothing_drawn_after_end", len(l.afterEnd) == 0, "%s", strings.Join(l.afterEnd, "; "))
	rep.Add("draw_done_matches_records", l.done.Lot.Count == uint32(len(l.winners)) &&
		l.done.Lot.Root == lottery.ListRoot(l.winners) && l.done.Lot.WaitlistRoot == lottery.ListRoot(l.waitlist), "")
	rep.Add("promotions_follow_waitlist", len(l.promoted) <= len(l.waitlist) && slices.Equal(l.promoted, l.waitlist[:min(len(l.promoted), len(l.waitlist))]),
		"promoted %v", head(l.promoted))
	within := true
	for _, t := range l.tokens {
		within = within && t >= 1 && t <= l.def.SaleLimit
	}
	rep.Add("tokens_within_sale_limit", within, "")
	st, err := loadState(skuDir, loadOptions{})
	switch {
	case err != nil:
		rep.Add("state_replays", false, "%v", err)
	default:
		a := st.m.Audit()
		rep.Add("state_replays", a.OK(), "%v", a.Violations)
	}
	return rep, nil
}

func nonNil(s []uint32) []uint32 {
	if s == nil {
		return []uint32{}
	}
	return s
}

func head(s []uint32) []uint32 { return s[:min(len(s), 10)] }

// verifyEvidence audits published evidence against an exported pool.
func verifyEvidence(evidencePath, poolPath string) (lottery.Report, error) {
	raw, err := os.ReadFile(evidencePath)
	if err != nil {
		return lottery.Report{}, err
	}
	pool, err := os.ReadFile(poolPath)
	if err != nil {
		return lottery.Report{}, err
	}
	var head struct {
		Phase   string `json:"phase"`
		EndedAt string `json:"ended_at"`
	}
	if json.Unmarshal(raw, &head) == nil && head.Phase == sku.PhaseEnded.String() {
		return lottery.Report{}, &checkFailed{msg: fmt.Sprintf("%s: the lottery ended undrawn at %s (phase ENDED): every entry lost, there is no draw to verify",
			evidencePath, head.EndedAt)}
	}
	ev, err := lottery.ParseEvidence(raw)
	if err != nil {
		return lottery.Report{}, &checkFailed{msg: fmt.Sprintf("%s: %v", evidencePath, err)}
	}
	return lottery.Verify(ev, pool), nil
}
