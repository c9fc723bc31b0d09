package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/shell"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/admission"
	"github.com/seckill/seckill/snapshot"
	"github.com/seckill/seckill/wal"
)

// Admission mode: buyers in front of one SKU while its disk slows down,
// stalls and recovers. The SKU is the engine's own shell (package
// actors/shell) over the simulated disk, as in the other modes: it appends,
// hands the replies to the log's waiters and releases them once durable;
// the simulator is its host (admissionHost) and does only what package
// actors does around it: the inbox and the actor's rounds. Each buyer is
// admitted or refused by the admission rule (package admission) on the
// load the SKU publishes, as the ingress reads it: the age of the oldest
// call in its inbox, its log's waiter figures (wal.Log.Waits) and the
// durable view its last release published. An admitted buyer waits in the
// inbox for the actor, which takes the whole inbox (up to inboxBatch
// calls), has the shell decide each call (a few µs per call) and commits
// the round; the log commits the records by group commit (Flush, the
// flusher's step) on the simulated disk, whose fsync takes what the
// disk's phase draws:
//
//	fast    50 µs to 2 ms
//	medium  a tenth to four tenths of max_queue_wait, up to twice that
//	slow    1.5 to 4 times max_queue_wait, up to 30% more
//	erratic from 0.3-0.9 to 1.2-2.5 times max_queue_wait (a throttled
//	        device: some fsyncs fit max_queue_wait, others do not)
//	stall   one fsync of 3 to 8 times max_queue_wait
//
// Time is simulated, in µs. While an fsync runs, what happens meanwhile
// runs inside it (the store's Sync): arrivals, admissions, the actor's
// rounds and their appends, which form the next batch as they do beside a
// real flusher. A history is max(4, Steps/25) phases, then the admitted
// buyers are answered. The checks are in admission_check.go.

// inboxBatch is the most calls the actor takes at once (package actors'
// maxBatch).
const inboxBatch = 4096

// admissionStock is the SKU's sale_limit: stock never binds here.
const admissionStock = 10_000_000

// diskPhase is a span of simulated time whose fsyncs take lo..hi µs.
type diskPhase struct {
	kind       string
	start, end int64
	lo, hi     int64
}

// commitSpan is one group commit's fsync: when it ran, in which phase.
type commitSpan struct {
	start, end int64
	phase      int
}

// buyer is one admitted reserve, until its answer is released.
type buyer struct {
	call       core.Call
	admittedAt int64
	// firstCommit is the first commit its wait may overlap (the one under
	// way when it was admitted, else the next); seen the last commit
	// released when it was admitted (-1: none), whose latency admission
	// read.
	firstCommit, seen int
}

// admissionRun is one admission history in progress.
type admissionRun struct {
	seed    uint64
	rng     *rand.Rand
	now     int64 // µs
	trace   func(format string, args ...any)
	faults  map[string]int
	replies map[string]int

	limits     admission.Limits
	ramp       admission.Ramp
	arrivalGap int64 // mean µs between two arrivals
	decideCost int64 // µs the actor takes per call

	phaseCount int
	phases     []diskPhase
	commits    []commitSpan
	released   int // the last commit whose waiters were released (-1: none)

	// The SKU: the engine's shell over the simulated disk. view is its
	// durable view, published at each release (as the actor publishes it
	// for the ingress).
	sh       *shell.Shell
	view     shell.View
	walDir   *directory
	store    *logStore
	msClock  int64 // the store's own clock (unused: Sync's time passes here)
	flushing bool

	nextArrival int64
	buyers      int
	inFlight    int64    // admitted, not yet answered
	inbox       []*buyer // waiting for the actor
	deciding    []*buyer // taken by the actor, decided at actorFree
	// answered are buyers whose reply was released and checked, for the
	// next arrivals to reuse: a buyer is most of a kilobyte (its
	// core.Call), and a history admits thousands.
	answered   []*buyer
	actorFree  int64
	last       admission.Decision // the last arrival's
	lastOpenAt int64              // when an arrival was last admitted Open
	// throttledAt is the log's release count when commits last made the
	// wait reach max_queue_wait (-1: never), as the checks judge it.
	throttledAt int64

	err error // the first check that failed
}

// RunAdmission runs one admission history: deterministic, like Run.
func RunAdmission(o Options) Result {
	a := &admissionRun{seed: o.Seed, rng: rand.New(rand.NewPCG(o.Seed, 0xad41)), released: -1,
		faults: map[string]int{}, replies: map[string]int{}, walDir: newDirectory(), phaseCount: max(4, o.Steps/25), throttledAt: -1}
	a.trace = func(string, ...any) {}
	if o.Trace != nil {
		a.trace = func(format string, args ...any) { fmt.Fprintf(o.Trace, format+"\n", args...) }
	}
	res := Result{Seed: o.Seed, Faults: a.faults, Replies: a.replies, Step: -1, Mode: ModeAdmission}
	if res.Err = protectRun(a.setUp); res.Err != nil {
		return res
	}
	for i := range a.phases {
		p := &a.phases[i]
		a.trace("phase %d: %s %v..%v, fsync %v..%v", i, p.kind, us(p.start), us(p.end), us(p.lo), us(p.hi))
		res.Step, res.Steps = i, i+1
		if res.Err = protectRun(func() error { return a.runPhase(i) }); res.Err != nil {
			return res
		}
	}
	res.Step = len(a.phases)
	res.Err = protectRun(a.drain)
	return res
}

// protectRun runs fn and turns a panic into a failure.
func protectRun(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return fn()
}

// us renders simulated µs.
func us(t int64) time.Duration { return time.Duration(t) * time.Microsecond }

// setUp draws the limits, the arrivals and the disk's phases, starts the
// SKU's shell on an empty disk and defines the SKU. Its disk slows down
// once the definition is durable: no buyer comes before (the ingress
// knows no SKU that is not defined).
func (a *admissionRun) setUp() error {
	g := a.rng
	w := int64(20_000 + g.IntN(280_001)) // max_queue_wait: 20 to 300 ms
	a.limits = admission.Limits{MaxQueueWait: us(w), RetryMargin: 32, MinRate: float64(200 + g.IntN(4801))}
	a.arrivalGap = 1_000_000 / int64(300+g.IntN(2701)) // 300 to 3,000 buyers/s
	a.decideCost = int64(1 + g.IntN(10))
	a.nextArrival = 1 + g.Int64N(a.arrivalGap)
	start := int64(0)
	for range a.phaseCount {
		p := diskPhase{start: start}
		switch weighted(g, 35, 15, 25, 15, 10) {
		case 0:
			p.kind, p.lo = "fast", int64(50+g.IntN(451))
			p.hi = p.lo + g.Int64N(2_000-p.lo+1)
			p.end = start + 4*w + 200_000 + g.Int64N(6*w+1)
		case 1:
			p.kind, p.lo = "medium", w/10+g.Int64N(3*w/10+1)
			p.hi = p.lo + g.Int64N(p.lo+1)
			p.end = start + 4*w + g.Int64N(6*w+1)
		case 2:
			p.kind, p.lo = "slow", 3*w/2+g.Int64N(5*w/2+1)
			p.hi = p.lo + g.Int64N(3*p.lo/10+1)
			p.end = start + 3*p.hi + g.Int64N(5*p.hi+1)
		case 3:
			p.kind, p.lo = "erratic", 3*w/10+g.Int64N(6*w/10+1)
			p.hi = 6*w/5 + g.Int64N(13*w/10+1)
			p.end = start + 3*p.hi + g.Int64N(5*p.hi+1)
		default:
			p.kind, p.lo = "stall", 3*w+g.Int64N(5*w+1)
			p.hi = p.lo
			p.end = start + p.hi/2
		}
		a.faults["phase_"+p.kind]++
		a.phases = append(a.phases, p)
		start = p.end
	}

	a.sh = shell.New(shell.Config{
		CampaignID: campaignID,
		SKUID:      skuID,
		Core:       core.Config{Rand: randReader{&a.rng}},
		OpenLog:    a.openLog,
		Snapshots:  &snapshot.Memory{},
		Executor:   admissionHost{a},
		Host:       admissionHost{a},
		Logger:     quiet,
	})
	if err := a.sh.Recover(a.wallClock()); err != nil {
		return fmt.Errorf("recovery: %w", err)
	}
	def := sku.Definition{CampaignID: campaignID, SKUID: skuID, StartAt: startMs, EndAt: startMs + 365*24*3600*1000,
		PaymentWindowMs: 3600 * 1000, SaleLimit: admissionStock}
	c := &core.Call{Kind: core.KindDefine, Def: &def}
	a.sh.Decide(a.wallClock(), c)
	if c.Outcome != sku.OutcomeOK {
		return fmt.Errorf("define: %s %v", c.Outcome, c.Err)
	}
	a.sh.Commit(a.wallClock())
	a.commit()
	a.store.syncing = a.fsync // from here on, an fsync takes the phase's time
	return a.err
}

// openLog opens the SKU's log over the simulated disk (shell.Config.OpenLog):
// its waiter figures read the simulated clock.
func (a *admissionRun) openLog() (*wal.Log, error) {
	a.store = openLogStore(a.walDir, 64<<20, &storeFaults{}, &a.msClock)
	return wal.OpenOver("sim/admission", a.store, wal.Options{Stepped: true, SegmentSize: 64 << 20,
		MaxBatchRecords: math.MaxInt32, MaxBatchBytes: math.MaxInt32, MaxWaiters: math.MaxInt32,
		Logger: quiet, Clock: func() time.Time { return time.UnixMicro(a.now) }})
}

// wallClock is the engine's clock at the simulated now.
func (a *admissionRun) wallClock() time.Time { return time.UnixMilli(startMs).Add(us(a.now)) }

// runPhase runs phase i to its end.
func (a *admissionRun) runPhase(i int) error {
	if err := a.runUntil(a.phases[i].end); err != nil {
		return err
	}
	return a.checkRecovered(i)
}

// drain stops the arrivals and runs until every admitted buyer is
// answered.
func (a *admissionRun) drain() error {
	a.nextArrival = math.MaxInt64
	for a.err == nil {
		switch {
		case a.pending():
			a.commit()
		case len(a.deciding) > 0:
			a.now = max(a.now, a.actorFree)
			a.actorDone()
		default:
			if a.inFlight != 0 {
				return fmt.Errorf("%d admitted buyers never answered", a.inFlight)
			}
			return nil
		}
	}
	return a.err
}

// runUntil runs what happens up to t: arrivals, the actor's rounds and,
// unless an fsync is running (what happens during it runs in it), the
// group commits they start. A commit that starts before t may end after
// it: the clock then reads its end, else t.
func (a *admissionRun) runUntil(t int64) error {
	for a.err == nil {
		if !a.flushing && a.pending() && a.now <= t {
			a.commit()
			continue
		}
		actor := len(a.deciding) > 0 && a.actorFree <= a.nextArrival
		next := a.nextArrival
		if actor {
			next = a.actorFree
		}
		if next > t {
			break
		}
		a.now = next
		if actor {
			a.actorDone()
		} else {
			a.arrive()
		}
	}
	a.now = max(a.now, t)
	return a.err
}

// phaseAt returns the phase of time t (the last one after the end).
func (a *admissionRun) phaseAt(t int64) int {
	for i := range a.phases {
		if t < a.phases[i].end {
			return i
		}
	}
	return len(a.phases) - 1
}

// arrive is one buyer at the door: admitted (into the inbox) or refused,
// as the ingress's gate admits (a permit while the decision's permits
// exceed those in flight).
func (a *admissionRun) arrive() {
	a.nextArrival = a.now + 1 + a.rng.Int64N(2*a.arrivalGap)
	ld := a.load()
	d := a.limits.Decide(ld, &a.ramp)
	a.last = d
	a.noteThrottle(ld)
	if refusal, refused := d.Refusal(a.inFlight); refused {
		a.replies["reserve "+refusal.String()]++
		return
	}
	if d.State == admission.Open {
		a.lastOpenAt = a.now
	}
	if d.Probe {
		a.replies["reserve probe"]++
	}
	a.inFlight++
	if err := a.checkSteps(ld); err != nil {
		a.fail(err)
	}
	a.buyers++
	var b *buyer
	if n := len(a.answered); n > 0 {
		b, a.answered = a.answered[n-1], a.answered[:n-1]
	} else {
		b = new(buyer)
	}
	*b = buyer{admittedAt: a.now, firstCommit: len(a.commits), seen: a.released}
	if a.flushing {
		b.firstCommit--
	}
	id := strconv.Itoa(a.buyers)
	b.call = core.Call{Kind: core.KindReserve, RequestID: "q" + id, UserID: "u" + id, Ref: b}
	a.inbox = append(a.inbox, b)
	if len(a.deciding) == 0 {
		a.take()
	}
}

// load is what the SKU publishes now, as the ingress reads it (package
// actors' SKU.Stats): the durable view's stock, the inbox's oldest call,
// the log's waiter figures.
func (a *admissionRun) load() admission.Load {
	w := a.sh.Log().Waits()
	ld := admission.Load{Available: int64(a.view.Counts.Available),
		CommitWait: w.Oldest, CommitLatency: w.Last, Commits: w.Releases}
	if len(a.inbox) > 0 {
		ld.InboxAge = us(a.now - a.inbox[0].admittedAt)
	}
	return ld
}

// take hands the inbox to the actor: up to inboxBatch calls, decided
// after their cost in time.
func (a *admissionRun) take() {
	n := min(len(a.inbox), inboxBatch)
	a.deciding = append(a.deciding[:0], a.inbox[:n]...)
	a.inbox = append(a.inbox[:0], a.inbox[n:]...)
	a.actorFree = a.now + int64(n)*a.decideCost
}

// actorDone is the actor's round, as package actors' drain: the shell
// decides the batch at one clock reading and commits it (appends the
// records, hands the calls to the log as one waiter).
func (a *admissionRun) actorDone() {
	now := a.wallClock()
	for _, b := range a.deciding {
		a.sh.Decide(now, &b.call)
	}
	a.deciding = a.deciding[:0]
	a.sh.Commit(now)
	if len(a.inbox) > 0 {
		a.take()
	}
}

// pending reports records appended and not yet durable.
func (a *admissionRun) pending() bool {
	log := a.sh.Log()
	return log.LastIndex() > log.DurableIndex()
}

// commit is one step of the flusher: a group commit of the pending
// records (Flush), whose fsync runs what happens meanwhile, and whose
// waiters the log then releases to the shell's host.
func (a *admissionRun) commit() {
	a.flushing = true
	err := a.sh.Log().Flush()
	a.flushing = false
	if err != nil {
		a.fail(fmt.Errorf("flush: %w", err))
	}
}

// fsync is the time one fsync takes: drawn from the phase it starts in;
// what happens meanwhile runs in it.
func (a *admissionRun) fsync() {
	i := a.phaseAt(a.now)
	p := &a.phases[i]
	d := p.lo + a.rng.Int64N(p.hi-p.lo+1)
	a.commits = append(a.commits, commitSpan{start: a.now, end: a.now + d, phase: i})
	a.runUntil(a.now + d) // no flush in it (a.flushing): its only error is a.err
}

// fail records the first failure.
func (a *admissionRun) fail(err error) {
	if a.err == nil {
		a.err = err
	}
}

// admissionHost is the shell's Host and Executor in an admission history:
// it publishes the durable view and checks each buyer's wait as its reply
// is released. Nothing fails, ticks or snapshots here: an answer without
// the log, a failure or a job handed over fails the history.
type admissionHost struct{ a *admissionRun }

func (admissionHost) Appending(*sku.Machine, uint64, []sku.Record) {}

func (h admissionHost) Answer(calls []*core.Call) {
	h.a.fail(fmt.Errorf("%d calls answered at once: %v", len(calls), calls[0].Err))
}

// Release publishes the batch's view and answers its buyers.
func (h admissionHost) Release(rel *shell.Release) {
	a := h.a
	if !rel.Durable {
		a.fail(fmt.Errorf("the log released %d calls undurable: %v", len(rel.Calls), rel.Failure))
		return
	}
	a.view = rel.View
	a.released = len(a.commits) - 1
	for _, c := range rel.Calls {
		b, ok := c.Ref.(*buyer)
		if !ok { // the definition
			continue
		}
		a.inFlight--
		a.replies["reserve "+c.Result.Outcome.String()]++
		if err := a.checkWait(b); err != nil {
			a.fail(err)
		}
		a.answered = append(a.answered, b)
	}
}

func (admissionHost) Ticked(int, int64) {}

func (admissionHost) Recovered(*shell.Recovery) {}

func (h admissionHost) Failed(cause error) { h.a.fail(fmt.Errorf("the SKU failed: %w", cause)) }

func (admissionHost) SnapshotWritten(shell.SnapshotInfo) {}

func (admissionHost) SnapshotDone(shell.SnapshotInfo, error) {}

func (h admissionHost) Go(j *shell.Job) {
	h.a.fail(fmt.Errorf("the shell handed over a %s job, which no admission history asks for", j.Kind))
}

func (h admissionHost) After(_ time.Duration, j *shell.Job) { h.Go(j) }
