package sim

import (
	"fmt"
	"math/rand/v2"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/lottery"
)

// The lottery workload: one seed in five defines its SKU as a lottery.
// Its calls reuse the plan's kinds, so the plain histories stay as they
// were: a new reserve is a new entry (the holder of its entry pass, as a
// reserve's: a tier, subject keys, a risk level), a repeat is an entry
// repeated (by request_id, or by user under a new one) or now and then a
// plain reserve (LOTTERY_SALE), a lookup reads an entry's status, and one
// redefinition in two is the admin's draw (now and then with the wrong
// round, the fallback round or randomness of the wrong length). The shell
// hands the ranking to its executor, which runs it at a later tick (or it
// is lost in a crash); a draw is then recorded DrawBatch records a round,
// each round after the last at a tick or the draw's timer.

// lotteryRules draws a lottery's rules: entries open at the sale's start
// for 20-60 s, the beacon round published 3-6 s after the close, a
// waitlist of 0-5, tiers half the time.
func lotteryRules(g *rand.Rand, start int64) *sku.LotteryRules {
	closeAt := start + 20_000 + int64(g.IntN(40_000))
	round := uint64((closeAt/1000-lottery.QuicknetGenesis)/lottery.QuicknetPeriod + 2 + int64(g.IntN(2)))
	l := &sku.LotteryRules{EntriesOpenAt: start, EntriesCloseAt: closeAt,
		Beacon:   lottery.Beacon{Source: lottery.SourceDrandQuicknet, Round: round},
		Waitlist: uint32(g.IntN(6))}
	if g.IntN(2) == 0 {
		l.Tiers = []lottery.Quota{{Tier: 1, Count: uint32(1 + g.IntN(3))}, {Tier: 0, Rest: true}}
	}
	return l
}

// withSecrets returns d with the lottery secrets the engine drew at its
// first definition: random inputs of the draw, not decisions.
func (r *run) withSecrets(d sku.Definition) sku.Definition {
	if d.Lottery == nil || r.sh.Failed() != nil {
		return d
	}
	if lr := r.sh.Core().Machine().Definition().Lottery; lr != nil {
		rules := *d.Lottery
		rules.ServerSeed, rules.PseudonymKey = lr.ServerSeed, lr.PseudonymKey
		d.Lottery = &rules
	}
	return d
}

// lotteryCall decides a call of a lottery SKU's workload; handled is false
// for the calls that run as on any SKU.
func (r *run) lotteryCall(spec callSpec) (handled bool, err error) {
	now, m := r.now, r.model
	switch spec.kind {
	case callReserve, callReserveRepeat:
		if spec.kind == callReserveRepeat && spec.b%5 == 0 {
			return false, nil // a plain reserve: LOTTERY_SALE
		}
		request, user, holder := r.pickRequest(spec)
		if spec.kind == callReserveRepeat && spec.b%5 == 1 {
			request = fmt.Sprintf("q%d-again", len(r.reqIDs)) // the same user, another request_id
		}
		c := &core.Call{Kind: core.KindEnter, RequestID: request, UserID: user, Holder: holder}
		return true, r.decide(c, func() modelReply {
			e := m.enter(now, request, user, holder)
			return modelReply{outcome: e.outcome, seq: e.seq, duplicate: e.duplicate}
		})
	case callLookup:
		request, _, _ := r.pickRequest(callSpec{kind: callReserveRepeat, a: spec.a})
		c := &core.Call{Kind: core.KindEntry, RequestID: request}
		return true, r.decide(c, func() modelReply {
			if m.lot == nil {
				return modelReply{}
			}
			return modelReply{seq: m.lot.byRequest[request]}
		})
	case callRedefine:
		if spec.b%2 == 1 {
			return false, nil
		}
		round := r.def.Lottery.Beacon.Round
		randomness := make([]byte, lottery.Size)
		for i := range randomness {
			randomness[i] = byte(r.rng.Uint32())
		}
		switch spec.a % 16 {
		case 1:
			randomness = randomness[:lottery.Size-1]
		case 2:
			round++
		case 3:
			round += lottery.FallbackRounds
		}
		var signature []byte
		if spec.a%16 == 4 { // a signature that is not the beacon's (its SHA-256 the randomness)
			signature = make([]byte, lottery.SignatureSize)
			for i := range signature {
				signature[i] = byte(r.rng.Uint32())
			}
			h := lottery.RandomnessOf(signature)
			randomness = h[:]
		}
		c := &core.Call{Kind: core.KindDraw, Round: round, Randomness: randomness, Signature: signature}
		return true, r.decide(c, func() modelReply { return modelReply{outcome: m.draw(now, round, randomness, signature)} })
	}
	return false, nil
}

// checkLotteryReply compares a lottery call's reply with the model's.
func checkLotteryReply(c *core.Call, want modelReply) error {
	switch c.Kind {
	case core.KindEnter:
		got := c.Entry
		if got.Outcome != want.outcome || got.Duplicate != want.duplicate || got.Entry.EntrySeq != want.seq {
			return fmt.Errorf("entry answered %s (duplicate %v, seq %d), model %s (duplicate %v, seq %d)",
				got.Outcome, got.Duplicate, got.Entry.EntrySeq, want.outcome, want.duplicate, want.seq)
		}
	case core.KindDraw:
		if c.Outcome != want.outcome {
			return fmt.Errorf("draw answered %s, model %s", c.Outcome, want.outcome)
		}
	case core.KindEntry:
		if c.Found != (want.seq != 0) || c.Found && c.Entry.Entry.EntrySeq != want.seq {
			return fmt.Errorf("entry status found %v (seq %d), model seq %d", c.Found, c.Entry.Entry.EntrySeq, want.seq)
		}
	}
	return nil
}
