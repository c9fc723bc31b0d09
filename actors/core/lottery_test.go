package core

import (
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/lottery"
)

// countRand gives distinct, fixed bytes: a lottery's secrets may not be zero.
type countRand struct{ n byte }

func (r *countRand) Read(p []byte) (int, error) {
	for i := range p {
		r.n++
		p[i] = r.n
	}
	return len(p), nil
}

const lotOpen = lottery.QuicknetGenesis * 1000

func lotAt(ms int64) time.Time { return time.UnixMilli(lotOpen + ms) }

// lotteryCore is a core with a lottery defined and 50 entries, and the log.
func lotteryCore(t *testing.T) (*Core, *[]sku.Record) { return lotteryCoreOf(t, Config{}) }

// lotteryCoreOf is lotteryCore with cfg (its Rand set here).
func lotteryCoreOf(t *testing.T, cfg Config) (*Core, *[]sku.Record) {
	cfg.Rand = &countRand{}
	c := New(cfg)
	c.Recovered(lotAt(-1000), sku.New(), 0, 0)
	log := &[]sku.Record{}
	d := sku.Definition{CampaignID: "c1", SKUID: "s1", StartAt: lotOpen, EndAt: lotOpen + 86_400_000,
		PaymentWindowMs: 60_000, SaleLimit: 10, ReleaseOnClose: true,
		Lottery: &sku.LotteryRules{EntriesOpenAt: lotOpen, EntriesCloseAt: lotOpen + 60_000,
			Beacon: lottery.Beacon{Source: lottery.SourceDrandQuicknet, Round: 31}, Waitlist: 5}}
	call := &Call{Kind: KindDefine, Def: &d}
	c.Decide(lotAt(-1000), call)
	play(t, c, log)
	if call.Err != nil {
		t.Fatal(call.Err)
	}
	for i := 1; i <= 50; i++ {
		e := &Call{Kind: KindEnter, RequestID: fmt.Sprintf("r%d", i), UserID: fmt.Sprintf("u%d", i)}
		c.Decide(lotAt(int64(i)), e)
		if e.Entry.Outcome != sku.OutcomeEntered {
			t.Fatal(e.Entry.Outcome)
		}
	}
	play(t, c, log)
	return c, log
}

// play appends the round's records to log and advances.
func play(t *testing.T, c *Core, log *[]sku.Record) *Actions {
	t.Helper()
	rd := c.Ready()
	*log = append(*log, rd.Records...)
	return c.Advance(len(rd.Records), nil)
}

func TestLotteryDrawIsRankedOffTheCore(t *testing.T) {
	c, log := lotteryCore(t)
	c.Tick(lotAt(60_000))
	if act := play(t, c, log); act.Rank != nil || (*log)[len(*log)-1].Type != sku.RecordEntriesClosed {
		t.Fatalf("the tick at the close: %v", (*log)[len(*log)-1].Type)
	}
	rnd := sha256.Sum256([]byte("r"))
	draw := &Call{Kind: KindDraw, Round: 31, Randomness: rnd[:]}
	c.Decide(lotAt(90_000), draw)
	act := play(t, c, log)
	if draw.Outcome != sku.OutcomeDrawStarted || act.Rank == nil {
		t.Fatalf("draw: %s, rank job %v", draw.Outcome, act.Rank)
	}
	rk := act.Rank.Run()
	// Meanwhile the SKU goes on; no second job is handed out.
	c.Tick(lotAt(90_001))
	if act := play(t, c, log); act.Rank != nil {
		t.Fatal("a second rank job while one runs")
	}
	c.Ranked(lotAt(90_002), rk)
	if act := play(t, c, log); act.MoreDraw || act.Rank != nil || c.Machine().DrawPending() {
		t.Fatalf("after the ranking: more %v, pending %v", act.MoreDraw, c.Machine().DrawPending())
	}
	if last := (*log)[len(*log)-1]; last.Type != sku.RecordDrawDone || last.Lot.Count != 10 {
		t.Fatalf("last record %+v", last)
	}

	// A restart after the draw's first half: the recovered core hands out
	// a new rank job and records the rest of the same list.
	for cut := len(*log) - 8; cut < len(*log); cut++ {
		m := sku.New()
		for i := range (*log)[:cut] {
			if err := m.Apply(&(*log)[i]); err != nil {
				t.Fatal(err)
			}
		}
		c2 := New(Config{Rand: &countRand{}})
		c2.Recovered(lotAt(95_000), m, uint64(cut), 0)
		c2.Tick(lotAt(95_000))
		var log2 []sku.Record
		act := play(t, c2, &log2)
		if !m.DrawPending() {
			continue
		}
		if act.Rank == nil {
			t.Fatalf("cut %d: no rank job after the restart", cut)
		}
		c2.Ranked(lotAt(95_001), act.Rank.Run())
		play(t, c2, &log2)
		for _, r := range log2 {
			if r.Type == sku.RecordWon && r.ExpireAt != 95_001+lotOpen+60_000 {
				t.Fatalf("cut %d: a resumed winner at %d", cut, r.At)
			}
		}
		if c2.Machine().DrawPending() {
			t.Fatalf("cut %d: draw still pending", cut)
		}
		got := c2.Machine().Freeze()
		wantF := c.Machine().Freeze()
		gi, _ := got.LotteryInfo(0)
		wi, _ := wantF.LotteryInfo(0)
		if gi.WinnersRoot != wi.WinnersRoot || gi.WaitlistRoot != wi.WaitlistRoot {
			t.Fatalf("cut %d: another result after the restart", cut)
		}
	}
}

// Config.DrawBatch bounds each round of a draw: 10 winners, a waitlist
// chunk and DRAW_DONE in rounds of at most 3 records, MoreDraw asked after
// each round but the last, and the result of one large round.
func TestLotteryDrawBatch(t *testing.T) {
	results := map[int]sku.LotteryInfo{}
	for _, batch := range []int{3, 0} {
		c, log := lotteryCoreOf(t, Config{DrawBatch: batch})
		rnd := sha256.Sum256([]byte("r"))
		c.Decide(lotAt(90_000), &Call{Kind: KindDraw, Round: 31, Randomness: rnd[:]})
		act := play(t, c, log)
		c.Ranked(lotAt(90_001), act.Rank.Run())
		rounds := 0
		for {
			n := len(*log)
			act = play(t, c, log)
			rounds++
			if got := len(*log) - n; got > 3 && batch == 3 {
				t.Fatalf("batch %d: a round of %d records", batch, got)
			}
			if !act.MoreDraw {
				break
			}
			c.Tick(lotAt(90_002))
		}
		if want := map[int]int{3: 4, 0: 1}[batch]; rounds != want || c.Machine().DrawPending() {
			t.Fatalf("batch %d: %d rounds (want %d), pending %v", batch, rounds, want, c.Machine().DrawPending())
		}
		results[batch], _ = c.Machine().Freeze().LotteryInfo(0)
	}
	if a, b := results[3], results[0]; a.WinnersRoot != b.WinnersRoot || a.WaitlistRoot != b.WaitlistRoot || a.Winners != 10 {
		t.Fatalf("another draw in small rounds: %+v, %+v", a, b)
	}
}

// A ranking frozen before a recovery in place that lost its DRAW_STARTED
// (frozen as the record was appended, before it was durable) is of
// another draw once a new one starts with other randomness: the shell
// hands that old result to the recovered core in place of the new
// request (one rank job out at a time). The core drops it and asks for
// the new draw's ranking, which records the draw.
func TestLotteryRankingOfALostDrawIsRankedAgain(t *testing.T) {
	c, log := lotteryCore(t)
	c.Tick(lotAt(60_000))
	play(t, c, log)
	durable := len(*log) // the draw's DRAW_STARTED is lost: never durable
	lost := sha256.Sum256([]byte("lost"))
	c.Decide(lotAt(90_000), &Call{Kind: KindDraw, Round: 31, Randomness: lost[:]})
	act := play(t, c, log)
	if act.Rank == nil {
		t.Fatal("no rank job for the first draw")
	}
	stale := act.Rank.Run()

	m := sku.New()
	for i := range (*log)[:durable] {
		if err := m.Apply(&(*log)[i]); err != nil {
			t.Fatal(err)
		}
	}
	*log = (*log)[:durable]
	c.Recovered(lotAt(91_000), m, uint64(durable), 0)
	rnd := sha256.Sum256([]byte("r"))
	draw := &Call{Kind: KindDraw, Round: 31, Randomness: rnd[:]}
	c.Decide(lotAt(92_000), draw)
	play(t, c, log) // its rank job is not handed out: the first one is still out
	if draw.Outcome != sku.OutcomeDrawStarted {
		t.Fatalf("second draw: %s", draw.Outcome)
	}

	n := len(*log)
	c.Ranked(lotAt(93_000), stale)
	act = play(t, c, log)
	if len(*log) != n {
		t.Fatalf("the lost draw's ranking recorded %d records", len(*log)-n)
	}
	if act.Rank == nil {
		t.Fatalf("no new rank job after the lost draw's ranking (more draw %v)", act.MoreDraw)
	}
	c.Ranked(lotAt(94_000), act.Rank.Run())
	if act := play(t, c, log); act.MoreDraw || act.Rank != nil || c.Machine().DrawPending() {
		t.Fatalf("after the new ranking: more %v, pending %v", act.MoreDraw, c.Machine().DrawPending())
	}
	if last := (*log)[len(*log)-1]; last.Type != sku.RecordDrawDone || last.Lot.Count != 10 {
		t.Fatalf("last record %+v", last)
	}
}
