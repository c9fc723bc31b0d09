package shell

import (
	"time"

	"github.com/seckill/seckill/actors/core"
)

// A lottery's draw is ranked off the shell, as a snapshot is written: the
// core hands out a Rank job on a frozen copy (core.Actions.Rank), the
// executor runs it (JobRank), and Done records the ranking's first batch;
// the core then asks for a round after each (Actions.MoreDraw) until
// DRAW_DONE. The ranking is a pure function of recorded inputs: a result
// made before a recovery, or by an earlier incarnation, is dropped, and
// the recovered core asks for it again.

// lotteryActions does what a round's actions ask of a lottery: start a
// ranking, and ask for another round while a ranking has records left:
// at once, or after Config.DrawPause. One JobDraw is pending at a time: a
// round the engine's tick made meanwhile (it records a batch too) starts
// no second one, so the pauses never overlap into a faster draw.
func (s *Shell) lotteryActions(now time.Time, act *core.Actions) {
	if act.Rank != nil {
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
	s.core.Ranked(now, j.rank)
	s.commit(now)
}
