package sku

import (
	"testing"

	"github.com/seckill/seckill/lottery"
	"github.com/seckill/seckill/lottery/lotterytest"
)

// A draw given the beacon's signature of a published quicknet round
// records it; a signature of another round, a changed one, or randomness
// that is not its SHA-256 answers INVALID and records nothing; replay, a
// snapshot and the evidence carry the signature, and a hand-made
// DRAW_STARTED with a bad signature does not apply.
func TestLotteryDrawWithBeaconSignature(t *testing.T) {
	q := lotterytest.Load(t).Quicknet
	round, sig, rnd := q.Round, q.Signature, lottery.RandomnessOf(q.Signature)
	roundT, _ := lottery.RoundTimeMs(lottery.SourceDrandQuicknet, round)
	d := lotteryDef(3, 2)
	d.StartAt, d.EndAt = roundT-120_000, roundT+1e9
	d.Lottery.EntriesOpenAt, d.Lottery.EntriesCloseAt = roundT-120_000, roundT-60_000
	d.Lottery.Beacon.Round = round
	r := &lotteryRun{t: t, m: New()}
	var err error
	if _, r.log, err = r.m.Define(roundT-130_000, d, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 8; i++ {
		r.enter(roundT-100_000+int64(i), string(rune('a'+i)), string(rune('A'+i)), 0)
	}
	flipped := append([]byte(nil), sig...)
	flipped[7] ^= 1
	other := rnd
	other[0] ^= 1
	for name, c := range map[string]struct {
		round uint64
		rnd   []byte
		sig   []byte
	}{
		"the fallback round with round R's signature": {round + lottery.FallbackRounds, rnd[:], sig},
		"a flipped signature bit":                     {round, func() []byte { h := lottery.RandomnessOf(flipped); return h[:] }(), flipped},
		"randomness that is not the signature's":      {round, other[:], sig},
	} {
		at, _ := lottery.RoundTimeMs(lottery.SourceDrandQuicknet, c.round)
		if o, out := r.m.StartDraw(at, c.round, c.rnd, c.sig, nil); o != OutcomeInvalid || len(out) != 0 {
			t.Fatalf("%s: %s with %d records", name, o, len(out))
		}
	}
	var o Outcome
	if o, r.log = r.m.StartDraw(roundT, round, rnd[:], sig, r.log); o != OutcomeDrawStarted {
		t.Fatalf("a draw with the published signature: %s", o)
	}
	started := r.log[len(r.log)-1]
	if started.Type != RecordDrawStarted || string(started.Lot.Signature) != string(sig) {
		t.Fatalf("DRAW_STARTED: %+v", started.Lot)
	}
	rk, _ := r.m.Freeze().RankDraw()
	for done := false; !done; {
		r.log, done = r.m.RecordDraw(roundT, rk, 0, r.log)
	}
	info, _ := r.m.Freeze().LotteryInfo(roundT)
	if !info.Done || string(info.Signature) != string(sig) {
		t.Fatalf("evidence: done %v, signature %x", info.Done, info.Signature)
	}
	checkSame(t, r.m, r.log) // replay and a decoded snapshot keep it (state section tag 4)
	restored, err := DecodeState(encodeFrozen(t, r.m.Freeze()))
	if err != nil {
		t.Fatal(err)
	}
	if ri, _ := restored.Freeze().LotteryInfo(roundT); string(ri.Signature) != string(sig) {
		t.Fatal("a decoded snapshot lost the signature")
	}
	enc := encodeFrozen(t, r.m.Freeze())
	enc[len(enc)-1] ^= 1 // the signature is the state's last bytes
	if _, err := DecodeState(enc); err == nil {
		t.Fatal("a snapshot with a changed signature decodes")
	}

	// A hand-made log whose DRAW_STARTED carries a changed signature.
	i := len(r.log) - 1
	for r.log[i].Type != RecordDrawStarted {
		i--
	}
	m := replay(t, r.log[:i])
	bad := r.log[i]
	bad.Lot = &LotteryFields{Round: round, Randomness: lottery.RandomnessOf(flipped), Signature: flipped}
	if err := m.Apply(&bad); err == nil {
		t.Fatal("a DRAW_STARTED with a bad signature applies")
	}
}
