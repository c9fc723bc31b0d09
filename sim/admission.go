package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/admission"
	"github.com/seckill/seckill/wal"
)

// Admission mode: buyers in front of one SKU while its disk slows down,
// stalls and recovers. Each buyer is admitted or refused by the admission
// rule (package admission, the real code) on the load the SKU publishes:
// the age of the oldest call in its inbox, and its log's waiter figures
// (wal.Log.Waits, the real code). An admitted buyer waits in the inbox for
// the actor, which takes the whole inbox (up to inboxBatch calls), decides
// it on the engine's core (a few µs per call) and hands the records to the
// log; the log commits them by group commit (Flush) on the simulated disk,
// whose fsync takes what the disk's phase draws:
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

// inboxBatch is the most calls the actor takes at once (the actors
// shell's maxBatch).
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

	core     *core.Core
	log      *wal.Log
	walDir   *directory
	msClock  int64 // the store's own clock (unused: Sync's time passes here)
	flushing bool

	nextArrival int64
	buyers      int
	inFlight    int64    // admitted, not yet answered
	inbox       []*buyer // waiting for the actor
	deciding    []*buyer // taken by the actor, decided at actorFree
	actorFree   int64
	last        admission.Decision // the last arrival's
	lastOpenAt  int64              // when an arrival was last admitted Open
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

// setUp draws the limits, the arrivals and the disk's phases, opens the
// log and defines the SKU.
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

	store := openLogStore(a.walDir, 64<<20, &storeFaults{}, &a.msClock)
	log, err := wal.OpenOver("sim/admission", store, wal.Options{Stepped: true, SegmentSize: 64 << 20,
		MaxBatchRecords: math.MaxInt32, MaxBatchBytes: math.MaxInt32, MaxWaiters: math.MaxInt32,
		Logger: quiet, Clock: func() time.Time { return time.UnixMicro(a.now) }})
	if err != nil {
		return fmt.Errorf("open the log: %w", err)
	}
	a.log = log
	store.syncing = a.fsync // from here on, an fsync takes the phase's time
	a.core = core.New(core.Config{Rand: admissionRand{a.rng}})
	a.core.Recovered(a.wallClock(), sku.New(), 0, 0)
	def := sku.Definition{CampaignID: campaignID, SKUID: skuID, StartAt: startMs, EndAt: startMs + 365*24*3600*1000,
		PaymentWindowMs: 3600 * 1000, SaleLimit: admissionStock}
	c := &core.Call{Kind: core.KindDefine, Def: &def}
	a.core.Decide(a.wallClock(), c)
	if c.Outcome != sku.OutcomeOK {
		return fmt.Errorf("define: %s %v", c.Outcome, c.Err)
	}
	if err := a.appendRound(); err != nil {
		return err
	}
	a.commit()
	return a.err
}

// admissionRand reads the history's PRNG (the reservation id key).
type admissionRand struct{ r *rand.Rand }

func (g admissionRand) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(g.r.Uint32())
	}
	return len(p), nil
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

// arrive is one buyer at the door: admitted (into the inbox) or refused.
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
	b := &buyer{admittedAt: a.now, firstCommit: len(a.commits), seen: a.released}
	if a.flushing {
		b.firstCommit--
	}
	b.call = core.Call{Kind: core.KindReserve, RequestID: fmt.Sprintf("q%d", a.buyers), UserID: fmt.Sprintf("u%d", a.buyers), Ref: b}
	a.inbox = append(a.inbox, b)
	if len(a.deciding) == 0 {
		a.take()
	}
}

// load is what the SKU publishes now, as actors.SKU.Stats gives it to
// the ingress.
func (a *admissionRun) load() admission.Load {
	w := a.log.Waits()
	ld := admission.Load{Available: int64(a.core.Machine().Counts().Available),
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

// actorDone decides the actor's batch on the core and commits the round:
// the records to the log, the replies to a waiter of the log.
func (a *admissionRun) actorDone() {
	for _, b := range a.deciding {
		a.core.Decide(a.wallClock(), &b.call)
	}
	a.deciding = a.deciding[:0]
	if err := a.appendRound(); err != nil {
		a.fail(err)
		return
	}
	if len(a.inbox) > 0 {
		a.take()
	}
}

// appendRound appends the core's records and hands its waiting calls to
// the log, as the actors shell's commit does.
func (a *admissionRun) appendRound() error {
	rd := a.core.Ready()
	var buf []byte
	for i := range rd.Records {
		buf = rd.Records[i].AppendPayload(buf[:0])
		if _, err := a.log.Append(byte(rd.Records[i].Type), buf); err != nil {
			return fmt.Errorf("append: %w", err)
		}
	}
	act := a.core.Advance(len(rd.Records), nil)
	if len(act.Answer) > 0 {
		return fmt.Errorf("%d calls answered at once: %v", len(act.Answer), act.Answer[0].Err)
	}
	if act.Wait != nil {
		a.log.Await(act.Wait.Index, &releaser{a: a, calls: append([]*core.Call(nil), act.Wait.Calls...)})
	}
	return nil
}

// releaser is the log waiter of one round's calls.
type releaser struct {
	a     *admissionRun
	calls []*core.Call
}

func (r *releaser) Durable(err error) {
	a := r.a
	if err != nil {
		a.fail(fmt.Errorf("the log failed: %w", err))
		return
	}
	a.released = len(a.commits) - 1
	for _, c := range r.calls {
		b, ok := c.Ref.(*buyer)
		if !ok { // the definition
			continue
		}
		a.inFlight--
		a.replies["reserve "+c.Result.Outcome.String()]++
		if err := a.checkWait(b); err != nil {
			a.fail(err)
		}
	}
}

// pending reports records appended and not yet durable.
func (a *admissionRun) pending() bool { return a.log.LastIndex() > a.log.DurableIndex() }

// commit is one step of the flusher: a group commit of the pending
// records (Flush), whose fsync runs what happens meanwhile.
func (a *admissionRun) commit() {
	a.flushing = true
	err := a.log.Flush()
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
