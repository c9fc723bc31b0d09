package core

import (
	"time"

	"github.com/seckill/seckill/actors/sku"
)

// A lottery's draw is ranked off the actor, as a snapshot is written: once
// DRAW_STARTED is recorded (or found after a restart) Advance hands the
// shell a Rank job on a frozen copy; the shell runs it on another goroutine
// and reports the ranking with Ranked; the core then records it,
// Config.DrawBatch records a round, asking for another round (Actions.MoreDraw) until
// DRAW_DONE. A ranking is a pure function of recorded inputs, so after a
// crash the same job gives the same list and RecordDraw resumes at the
// first winner not yet recorded.

// Rank is a ranking the shell must compute off the actor: run Run on any
// goroutine and report its result with Ranked.
type Rank struct {
	Frozen *sku.Frozen
}

// Run computes the ranking (nil when the frozen state holds no pending draw).
func (r *Rank) Run() *sku.DrawRanking {
	rk, _ := r.Frozen.RankDraw()
	return rk
}

// ranking is the core's draw schedule.
type ranking struct {
	running bool             // a Rank job was handed out and not reported
	result  *sku.DrawRanking // the ranking being recorded
}

// decideLottery decides the lottery calls.
func (c *Core) decideLottery(now int64, call *Call, out []sku.Record) []sku.Record {
	m := c.m
	switch call.Kind {
	case KindEnter:
		call.Entry, out = m.Enter(now, call.RequestID, call.UserID, call.Holder, out)
		call.Result.Outcome = call.Entry.Outcome
	case KindDraw:
		call.Outcome, out = m.StartDraw(now, call.Round, call.Randomness, call.Signature, out)
	case KindEntry:
		call.Entry.Entry, call.Found = m.EntryByRequest(call.RequestID)
	case KindFreeze:
		call.Report.Frozen = m.Freeze()
	}
	return out
}

// tickLottery closes due entries and records more of a ranking.
func (c *Core) tickLottery(ms int64) {
	if !c.m.Lottery() {
		return
	}
	c.round.records = c.m.LotteryTick(ms, c.round.records)
	c.recordRanking(ms)
}

// recordRanking records the next batch of the ranking, if one is known.
func (c *Core) recordRanking(ms int64) {
	rk := c.draw.result
	if rk == nil {
		return
	}
	var done bool
	c.round.records, done = c.m.RecordDraw(ms, rk, c.cfg.DrawBatch, c.round.records)
	if done {
		c.draw.result = nil
	} else {
		c.round.moreDraw = true
	}
}

// Ranked reports at now the ranking of a Rank job (nil: the frozen state
// had no pending draw) and records its first batch; Ready and Advance then
// commit them as a round. Call it between rounds. A ranking of another
// draw than the one pending (sku.Machine.RanksDraw: its DRAW_STARTED,
// frozen before it was durable, lost by a recovery in place, and another
// draw started since) is dropped: kept, it would record nothing round
// after round; the next Advance asks for the pending draw's ranking.
func (c *Core) Ranked(now time.Time, rk *sku.DrawRanking) {
	c.draw.running = false
	if c.failed != nil || rk == nil || !c.m.RanksDraw(rk) {
		return
	}
	c.draw.result = rk
	c.round.at = now
	c.recordRanking(now.UnixMilli())
}

// rankDue returns a Rank job when a draw is pending with no ranking known
// or running.
func (c *Core) rankDue() *Rank {
	if c.failed != nil || c.draw.running || c.draw.result != nil || !c.m.DrawPending() {
		return nil
	}
	c.draw.running = true
	return &Rank{Frozen: c.m.Freeze()}
}
