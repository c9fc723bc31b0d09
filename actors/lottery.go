package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/sku"
)

// rankedMessage brings a lottery ranking, computed off the actor, back to
// the SKU actor that asked for it.
type rankedMessage struct {
	rk *sku.DrawRanking
}

// startRank computes a draw's ranking on its own goroutine, from the frozen
// copy the core handed out (as a snapshot is written off the actor), and
// sends the result back to the actor. The ranking is a pure function of
// recorded inputs: a result arriving after a restart of the actor is the
// one the new incarnation would compute, and a stale one records nothing.
func (a *skuActor) startRank(ctx actor.Context, r *core.Rank) {
	root, self := ctx.ActorSystem().Root, ctx.Self()
	go func() {
		root.Send(self, rankedMessage{rk: r.Run()})
	}()
}

// onRanked records the first batch of a ranking; the core asks for more
// rounds (Actions.MoreDraw) until DRAW_DONE.
func (a *skuActor) onRanked(ctx actor.Context, msg rankedMessage) {
	a.noteDurable()
	a.core.Ranked(a.cfg.Clock(), msg.rk)
	a.commit(ctx)
}

// drawResume ends the pause between two rounds of a draw (Config.DrawPause).
type drawResume struct{}

// lotteryActions does what a round's actions ask of a lottery: start a
// ranking, and tick again while a ranking has records left: at once, or
// after Config.DrawPause. One pause at a time: a round the engine's tick
// made meanwhile (it records a batch too) starts no second timer, so the
// pauses never overlap into a faster draw.
func (a *skuActor) lotteryActions(ctx actor.Context, act *core.Actions) {
	if act.Rank != nil {
		a.startRank(ctx, act.Rank)
	}
	if !act.MoreDraw {
		return
	}
	if a.cfg.DrawPause <= 0 {
		ctx.Send(ctx.Self(), tick{now: a.cfg.Clock(), more: true})
		return
	}
	if a.drawPaused {
		return
	}
	a.drawPaused = true
	root, self := ctx.ActorSystem().Root, ctx.Self()
	time.AfterFunc(a.cfg.DrawPause, func() { root.Send(self, drawResume{}) })
}
