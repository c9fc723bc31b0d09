package shell

import (
	"time"

	"github.com/seckill/seckill/actors/core"
)

// A lottery's draw is ranked off the shell, as a snapshot is written: the
// core hands out a Rank job on a frozen copy (core.Actions.Rank), the
// executor runs it (JobRank), and Done records the ranking's first batch;
// the core then asks for a round after each (Actions.MoreDraw) until
// DRAW_DONE. The ranking is a pure function of the draw's recorded inputs:
// a ranking made before a recovery is the one the recovered core would
// compute, so while one is out the core's next request (after a recovery)
// is not handed out again: that one's result serves. Unless the recovery
// lost the draw (the ranking is frozen as DRAW_STARTED is appended, before
// it is durable) and another started since: the core drops that result
// and asks again (core.Core.Ranked).

// lotteryActions does what a round's actions ask of a lottery: start a
// ranking, and ask for another round while a ranking has records left:
// at once, or after Config.DrawPause. One JobDraw is pending at a time: a
// round the engine's tick made meanwhile (it records a batch too) starts
// no second one, so the pauses never overlap into a faster draw.
func (s *Shell) lotteryActions(now time.Time, act *core.Actions) {
	if act.Rank != nil && !s.timers.rank {
		s.timers.rank = true
		j, rank := s.job(JobRank, now), act.Rank
		j.run = func() { j.rank = rank.Run() }
		s.cfg.Executor.Go(j)
	}
	if !act.MoreDraw || s.timers.draw && !mutantDrawTimers {
		return
	}
	s.timers.draw = true
	s.cfg.Executor.After(s.cfg.DrawPause, s.job(JobDraw, now))
}

// ranked records the first batch of a ranking at now.
func (s *Shell) ranked(now time.Time, j *Job) {
	s.timers.rank = false
	s.core.Ranked(now, j.rank)
	s.commit(now)
}
