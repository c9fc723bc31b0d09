package sim

import (
	"fmt"
	"math/rand/v2"
)

// stepKind is what one step of a history does.
type stepKind uint8

const (
	stepCalls     stepKind = iota + 1 // a round of calls, then (mostly) a flush
	stepTick                          // the engine's tick: expiry, snapshots due, recovery due
	stepFlush                         // group commit: write, fsync, release replies
	stepCrash                         // power loss, then recovery from what the disk kept
	stepSnapshot                      // an operator's snapshot (then pruning and log truncation)
	stepFault                         // a write error, an fsync error or a slow fsync on the next flush
	stepClockJump                     // the wall clock jumps forward or backward
	stepRestore                       // restore to a point in time, compared with the history
	stepAudit                         // an operator's audit (now and then a caller gives up)
	// The steps of cells mode only (cells_mode.go).
	stepAgent         // the agent's next turns, the clock moved to when each is due
	stepLedgerFault   // ledger calls that fail, answers lost after the commit, the ledger down for a while
	stepFence         // another process of the cell takes its epoch: the agent is fenced
	stepOtherCell     // another cell tops up or returns tokens
	stepReturnRequest // an operator asks the cell for a return
)

var stepNames = [...]string{"", "calls", "tick", "flush", "crash", "snapshot", "fault", "clock-jump", "restore", "audit",
	"agent", "ledger-fault", "fence", "other-cell", "return-request"}

func (k stepKind) String() string { return stepNames[k] }

// callKind is one kind of call of a round.
type callKind uint8

const (
	callReserve       callKind = iota + 1 // a new request_id
	callReserveRepeat                     // a request_id already sent (retry, repeat, or another user's)
	callPay
	callCancel
	callCloseExpired
	callRelease
	callPause
	callResume
	callRedefine
	callGet
	callLookup
)

var callNames = [...]string{"", "reserve", "reserve-repeat", "pay", "cancel", "close-expired", "release",
	"pause", "resume", "redefine", "get", "lookup"}

func (k callKind) String() string { return callNames[k] }

// callSpec is one call, its arguments drawn as numbers that the run
// resolves against the state it has then (the n-th known request_id...), so
// that a step keeps a meaning when the shrinker drops others.
type callSpec struct {
	kind callKind
	a, b uint32
}

// step is one step of a history. dt (ms) is the time that passes before
// it; x is the step's own random number (fault kind, jump size, the seed
// of a crash's damage).
type step struct {
	kind  stepKind
	dt    int64
	calls []callSpec
	flush bool
	x     uint64
}

func (s step) String() string {
	out := fmt.Sprintf("+%dms %s", s.dt, s.kind)
	for _, c := range s.calls {
		out += fmt.Sprintf(" %s(%d,%d)", c.kind, c.a, c.b)
	}
	if s.kind == stepCalls && !s.flush {
		out += " (no flush)"
	}
	if s.kind != stepCalls && s.kind != stepFlush && s.kind != stepTick {
		out += fmt.Sprintf(" x=%d", s.x%1000)
	}
	return out
}

// weighted picks an index with the given weights.
func weighted(r *rand.Rand, weights ...int) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	n := r.IntN(total)
	for i, w := range weights {
		if n < w {
			return i
		}
		n -= w
	}
	return len(weights) - 1
}

// plan draws a history of n steps from r.
func plan(r *rand.Rand, n int) []step {
	steps := make([]step, n)
	for i := range steps {
		s := step{dt: int64(r.IntN(1500)), x: r.Uint64()}
		if r.IntN(4) == 0 {
			s.dt = 0
		}
		s.kind = []stepKind{stepCalls, stepTick, stepFlush, stepCrash, stepSnapshot, stepFault, stepClockJump, stepRestore, stepAudit}[weighted(r, 56, 12, 6, 5, 5, 7, 4, 3, 3)]
		if s.kind == stepCalls {
			s.flush = r.IntN(4) != 0
			for range 1 + r.IntN(4) {
				kind := callKind(1 + weighted(r, 30, 10, 20, 6, 3, 4, 1, 3, 2, 3, 3))
				s.calls = append(s.calls, callSpec{kind: kind, a: r.Uint32(), b: r.Uint32()})
			}
		}
		steps[i] = s
	}
	return steps
}
