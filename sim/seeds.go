package sim

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Summary is what a run of many seeds did.
type Summary struct {
	Seeds   int            // histories run
	Steps   int            // steps run in them
	Faults  map[string]int // faults injected, by kind
	Replies map[string]int // replies decided, by kind of call and outcome
	// Failures are the failing histories, in seed order (with StopAtFirst,
	// at most one per worker).
	Failures []Result
}

// SeedsOptions say which seeds RunSeeds runs.
type SeedsOptions struct {
	First, Count uint64 // seeds First..First+Count-1
	Steps        int    // steps per history
	// Workers run seeds side by side (each history stays on one
	// goroutine); 0 means one per CPU.
	Workers int
	// StopAtFirst stops handing out seeds once one fails.
	StopAtFirst bool
	// Mode is the kind of history each seed runs.
	Mode Mode
	// Progress, when set, is called after every seed with the number done
	// (from the worker goroutines, one at a time).
	Progress func(done int)
}

// Mode is the kind of history a seed runs.
type Mode uint8

const (
	ModeSKU       Mode = iota // one SKU's engine under faults (Run)
	ModeCampaign              // the SKUs of a campaign-scope campaign (RunCampaign)
	ModeAdmission             // admission over a disk that slows down (RunAdmission)
	ModeCells                 // a celled SKU's engine with the real agent over a faulty ledger (RunCells)
	ModeReplicas              // a replica set's role loops, commit index and stream decisions under faults (RunReplicas)
)

// Run runs one history of mode m.
func (m Mode) Run(o Options) Result {
	switch m {
	case ModeCampaign:
		return RunCampaign(o)
	case ModeAdmission:
		return RunAdmission(o)
	case ModeCells:
		return RunCells(o)
	case ModeReplicas:
		return RunReplicas(o)
	}
	return Run(o)
}

// Flag is the seckill-sim flag that selects m ("" for ModeSKU).
func (m Mode) Flag() string {
	switch m {
	case ModeCampaign:
		return "-campaign"
	case ModeAdmission:
		return "-admission"
	case ModeCells:
		return "-cells"
	case ModeReplicas:
		return "-replicas"
	}
	return ""
}

// Shrinks reports whether Shrink shrinks m's histories (those drawn as a
// step list that Options.Keep selects from).
func (m Mode) Shrinks() bool { return m == ModeSKU || m == ModeCells }

// RunSeeds runs one history per seed and sums them up.
func RunSeeds(o SeedsOptions) Summary {
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	var (
		next, done atomic.Uint64
		stop       atomic.Bool
		mu         sync.Mutex
		sum        = Summary{Faults: map[string]int{}, Replies: map[string]int{}}
		wg         sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				i := next.Add(1) - 1
				if i >= o.Count {
					return
				}
				res := o.Mode.Run(Options{Seed: o.First + i, Steps: o.Steps})
				mu.Lock()
				sum.Seeds++
				sum.Steps += res.Steps
				for kind, n := range res.Faults {
					sum.Faults[kind] += n
				}
				for kind, n := range res.Replies {
					sum.Replies[kind] += n
				}
				if res.Err != nil {
					sum.Failures = append(sum.Failures, res)
					if o.StopAtFirst {
						stop.Store(true)
					}
				}
				if o.Progress != nil {
					o.Progress(int(done.Add(1)))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sortFailures(sum.Failures)
	return sum
}

func sortFailures(f []Result) {
	for i := 1; i < len(f); i++ {
		for j := i; j > 0 && f[j].Seed < f[j-1].Seed; j-- {
			f[j], f[j-1] = f[j-1], f[j]
		}
	}
}

// maxShrinkRuns bounds the histories Shrink runs.
const maxShrinkRuns = 400

// Shrink looks for a shorter history of the same seed that still fails: it
// drops the steps after the failing one, then chunks of steps, halving the
// chunk size down to single steps, keeping every drop after which the
// history still fails (any check). Steps keep their own draws, so a kept
// step does the same thing it did. It returns the kept steps and the
// failure they give; it runs at most maxShrinkRuns histories.
func Shrink(failed Result) (keep []bool, res Result) {
	n := failed.Step + 1
	if n > len(failed.History) {
		n = len(failed.History)
	}
	keep = make([]bool, n)
	for i := range keep {
		keep[i] = true
	}
	res = failed
	runs := 0
	try := func(candidate []bool) bool {
		runs++
		r := failed.Mode.Run(Options{Seed: failed.Seed, Steps: n, Keep: candidate})
		if r.Err == nil {
			return false
		}
		res = r
		return true
	}
	for chunk := n / 2; chunk >= 1 && runs < maxShrinkRuns; chunk /= 2 {
		for start := 0; start < n && runs < maxShrinkRuns; start += chunk {
			candidate := append([]bool(nil), keep...)
			dropped := false
			for i := start; i < start+chunk && i < n; i++ {
				dropped = dropped || candidate[i]
				candidate[i] = false
			}
			if dropped && try(candidate) {
				keep = candidate
			}
		}
	}
	return keep, res
}

// Kept returns the steps of r's history that keep selects, with their
// indexes.
func Kept(r Result, keep []bool) (indexes []int, steps []string) {
	for i, k := range keep {
		if k && i < len(r.History) {
			indexes = append(indexes, i)
			steps = append(steps, r.History[i].String())
		}
	}
	return indexes, steps
}
