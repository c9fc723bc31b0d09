package sim

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/shell"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/recovery"
)

// The simulated SKU and its engine's settings.
const (
	campaignID = "sim"
	skuID      = "sku"
	// startMs is the simulated wall clock at the start of every history.
	startMs = 1_700_000_000_000
	// segmentSize is small so that histories cross many segment files.
	segmentSize = 512
	// snapshotKeep is the snapshots kept (the engine's default).
	snapshotKeep = 2
)

// Options say which history to run.
type Options struct {
	Seed  uint64
	Steps int
	// Keep, when not nil, runs only the steps i with Keep[i] (shrinking).
	Keep []bool
	// Trace, when set, receives one line per step run.
	Trace io.Writer
}

// Result is what one history did.
type Result struct {
	Seed   uint64
	Steps  int            // steps run
	Faults map[string]int // faults injected, by kind
	// Replies counts the replies decided, by kind of call and outcome
	// (e.g. "pay REFUND_REQUIRED"): what the workload reached.
	Replies map[string]int
	// Err is the first check that failed (nil: every check passed), at
	// step Step (-1: the set-up, len(History): the final checks).
	Err     error
	Step    int
	History []step
	// Mode is the kind of history (Mode.Shrinks: whether Shrink shrinks it).
	Mode Mode
}

// Run runs one history: the steps drawn from o.Seed, each followed by the
// checks. It is deterministic: the same Options give the same Result.
func Run(o Options) Result {
	r := newRun(o.Seed)
	history := plan(rand.New(rand.NewPCG(o.Seed, 0x5eed)), o.Steps)
	res := Result{Seed: o.Seed, History: history, Faults: r.faults, Replies: r.replies, Step: -1}
	if res.Err = r.protect(r.setUp); res.Err != nil {
		return res
	}
	r.runSteps(o, &res, r.step, r.final)
	return res
}

// runSteps runs the steps of res.History that o keeps, each with step
// (which ends with its checks), then final, and notes in res the steps
// run and the first failure with its step.
func (r *run) runSteps(o Options, res *Result, step func(step) error, final func() error) {
	for i, s := range res.History {
		if o.Keep != nil && !o.Keep[i] {
			continue
		}
		res.Steps++
		if o.Trace != nil {
			fmt.Fprintf(o.Trace, "step %d: %s\n", i, s)
		}
		if res.Err = r.protect(func() error { return step(s) }); res.Err != nil {
			res.Step = i
			return
		}
	}
	res.Step = len(res.History)
	res.Err = r.protect(final)
}

// run is one history in progress: the disk, the process on it, the model.
type run struct {
	seed    uint64
	rng     *rand.Rand // this step's draws
	now     int64      // the simulated wall clock, ms
	faults  map[string]int
	replies map[string]int

	// The disk: survives crashes.
	walDir      *directory
	snaps       *simSnapshots
	storeFaults storeFaults
	// storeClock is the log store's clock, ms: a slow fsync moves it on.
	// The run's flush starts it at now and moves now to it; an input's
	// append that commits a full batch (logBatchRecords) moves it alone,
	// so the input keeps one time, as the flusher of a running log writes
	// while the actor's round keeps its now.
	storeClock int64

	// The process: replaced at a crash. sh is the engine's own shell
	// (package actors/shell) over the disk; the simulator is its host and
	// executor (host.go).
	sh    *shell.Shell
	exec  executor
	slots truncationSlots
	// inputs are the log failures releases reported, brought back to the
	// shell after the input that made them (shell.Release.Failure).
	inputs []logFailure
	// recovery is set by a recovery during an input: it is checked once
	// the input returns. starting is set while a process starts.
	recovery *shell.Recovery
	starting bool
	// failure is the first check a host callback found failing.
	failure error
	// backoff is the model of the recoveries from disk (backoff.go).
	backoff backoff
	// round counts the records of the shell's last round (Host.Appending).
	round int

	// The model and the history it checks against.
	model      *model
	modelIndex uint64            // the log index of the model's last effect
	saved      map[uint64]*model // the model after each record not yet durable
	hashAt     map[uint64][32]byte
	recordAt   map[uint64]int64 // the decision time of each record appended
	appendedAt map[uint64]int64 // the time of the input that appended each record
	logFirst   uint64           // the log's first index as last seen
	acked      uint64           // the highest index an acknowledged reply rested on
	// restsOn is, for each call decided and not yet released, the last
	// record it rests on by the model's count: every record decided before
	// its reply, its own included.
	restsOn   map[*core.Call]uint64
	ackedReqs map[string]modelRequest
	replica   *sku.Machine // the durable log replayed, record by record
	replicaAt uint64

	// Audits (audit.go): the callers waiting, the result of a recount no
	// caller took, the end of the cool-down (ms), and, while a recount's
	// answers are handed out, the model at its freeze, the log index of
	// the freeze and how many callers took it.
	auditCallers   []*auditCaller
	auditKept      *keptAudit
	auditNotBefore int64
	auditExpect    *model
	auditIndex     uint64
	auditTaken     int

	// A lottery SKU's draw: whether the core knows a ranking it is still
	// recording (the model's account: delivered by a JobRank since the
	// last recovery), and the entries acknowledged.
	rankKnown    bool
	ackedEntries map[string]string // request_id -> user

	// skuID names the SKU: the constant skuID, or one SKU of a campaign
	// (campaign.go).
	skuID string
	// hooks, set by a campaign run (campaign.go), see what the shell does
	// as it shows it to the campaign's purchase registry.
	hooks runHooks

	// The workload.
	lottery bool // the SKU is a lottery (step_lottery.go)
	users   int
	def     sku.Definition
	ledger  simLedger // a celled SKU's quota ledger (cells_step.go)
	// cells, in cells mode only, is the real agent over the ledger in
	// memory (cells_mode.go): it makes the celled SKU's calls, in place
	// of simLedger.
	cells    *cellsRun
	requests []modelRequest // request_ids sent, with their user (request in .request)
	reqIDs   []string
	// holders are the entry-pass holders of the request_ids sent (zero:
	// no pass), parallel to reqIDs: a resend carries the same pass.
	holders []sku.Holder
}

// runHooks let a campaign run (campaign.go) see one SKU's shell: the
// records a round appends, each batch released, each recovery. All nil
// for a lone SKU.
type runHooks struct {
	purchaseLimit sku.PurchaseLimit
	celled        bool                                                     // a campaign run's SKUs, all celled or none
	lottery       bool                                                     // a campaign run's SKU sold by lottery
	records       func(m *sku.Machine, first uint64, records []sku.Record) // before they are appended
	release       func(r *shell.Release)                                   // before the replies are acknowledged
	recovered     func(m *sku.Machine)                                     // after a recovery, checked
}

var quiet = slog.New(slog.DiscardHandler)

func newRun(seed uint64) *run {
	r := &run{
		skuID:        skuID,
		seed:         seed,
		rng:          rand.New(rand.NewPCG(seed, 1)),
		now:          startMs,
		faults:       map[string]int{},
		replies:      map[string]int{},
		walDir:       newDirectory(),
		model:        newModel(),
		saved:        map[uint64]*model{},
		hashAt:       map[uint64][32]byte{},
		recordAt:     map[uint64]int64{},
		appendedAt:   map[uint64]int64{},
		restsOn:      map[*core.Call]uint64{},
		ackedReqs:    map[string]modelRequest{},
		ackedEntries: map[string]string{},
	}
	r.snaps = &simSnapshots{r: r}
	r.storeFaults.counts = r.faults
	r.snaps.Now = r.t
	r.exec.r = r
	r.saved[0] = r.model.clone()
	r.model.onEffect = r.saveModel
	return r
}

// saveModel keeps the model as it is after the record it just added.
func (r *run) saveModel() {
	r.modelIndex++
	r.saved[r.modelIndex] = r.model.clone()
}

// protect runs fn and turns a panic of the engine into a failure.
func (r *run) protect(fn func() error) error { return protectRun(fn) }

func (r *run) t() time.Time { return time.UnixMilli(r.now) }

// fail keeps the first check a host callback found failing: the input
// that made it returns it.
func (r *run) fail(err error) {
	if r.failure == nil {
		r.failure = err
	}
}

// setUp starts the engine on an empty disk and defines the SKU.
func (r *run) setUp() error {
	g := r.rng
	r.users = 2 + g.IntN(30)
	start := startMs + int64(g.IntN(3000))
	r.def = sku.Definition{
		CampaignID: campaignID, SKUID: r.skuID,
		StartAt: start, EndAt: start + 60_000 + int64(g.IntN(600_000)),
		PaymentWindowMs: 1000 + int64(g.IntN(15_000)),
		SaleLimit:       uint32(1 + g.IntN(10)),
		ReleaseOnClose:  g.IntN(4) != 0,
	}
	// Entry passes: a cap on unpaid reservations per subject (0: none) and,
	// now and then, a shorter payment window for high-risk passes.
	r.def.MaxUnpaidPerSubject = uint32(g.IntN(3))
	if g.IntN(2) == 0 {
		r.def.PaymentWindowHighRiskMs = 1 + int64(g.IntN(int(r.def.PaymentWindowMs)))
	}
	r.lottery = (r.seed%5 == 4 && r.hooks.purchaseLimit == sku.PurchaseLimitSKU || r.hooks.lottery) && r.cells == nil // a celled SKU cannot be a lottery
	r.def.PurchaseLimit = r.hooks.purchaseLimit
	if r.lottery {
		r.def.Lottery = lotteryRules(g, start)
		if t, _ := r.def.Lottery.Beacon.TimeMs(); r.def.EndAt <= t {
			r.def.EndAt = t + 60_000 // the draw comes before the sale ends
		}
	}
	if err := r.start(); err != nil {
		return err
	}
	// A quarter of the seeds run a celled SKU (cells_step.go), but never
	// a lottery seed (seed%5 == 4): a celled SKU cannot be a lottery, nor
	// cap max_unpaid_per_subject (Definition.Validate), so seeds 3, 7, 11,
	// 15 of every 20 are celled, 4, 9, 14, 19 lotteries, 19 not celled.
	// A quarter of the campaign runs have all their SKUs celled (hooks:
	// a celled campaign-scope campaign as one cell sees it: its registry
	// over its celled SKUs, the state's cell then purchase sections
	// across crashes and snapshots).
	if (r.seed%4 == 3 || r.hooks.celled) && !r.lottery {
		r.def.Cell, r.def.CellMapVersion = "c1", 1
		r.def.MaxUnpaidPerSubject = 0
	}
	if r.cells != nil { // the ledger's sale_limit, shared with another cell
		r.def.SaleLimit = uint32(8 + g.IntN(40))
	}
	def := r.def
	c := &core.Call{Kind: core.KindDefine, Def: &def}
	if err := r.decide(c, func() modelReply { return modelReply{outcome: r.model.define(r.now, r.withSecrets(r.def))} }); err != nil {
		return err
	}
	if r.def.Cell != "" && r.cells == nil { // the cell's initial grant (in cells mode: the ledger's, through the agent)
		if err := r.cellCall(callSpec{kind: callRedefine, a: 2 * uint32(g.IntN(8)), b: 0}); err != nil {
			return err
		}
	}
	if err := r.advance(); err != nil {
		return err
	}
	return r.flush()
}

// start is a process start: a new shell over the disk, which opens the
// log and recovers with the recovery plan; then the checks of a recovery.
func (r *run) start() error {
	r.sh = shell.New(r.shellConfig())
	r.backoff = backoff{}
	r.starting = true
	err := r.sh.Recover(r.t())
	r.starting = false
	if err != nil {
		return fmt.Errorf("recovery: %w", err)
	}
	r.recovery = nil
	return r.recovered()
}

// recovered checks the state a recovery rebuilt: nothing acknowledged is
// lost, nothing appears that the history did not decide, and the model
// goes back to the record the log now ends at.
func (r *run) recovered() error {
	r.rankKnown = false // the recovered core ranks the draw again
	log := r.sh.Log()
	last := log.LastIndex()
	r.logFirst = firstIndex(log)
	if last < r.acked {
		return fmt.Errorf("recovery: the log ends at record %d, but replies resting on record %d were acknowledged", last, r.acked)
	}
	m, ok := r.saved[last]
	if !ok {
		return fmt.Errorf("recovery: the log ends at record %d, which no history of this run reached (durable records lost, or phantom ones)", last)
	}
	r.model = m.clone()
	r.model.onEffect = r.saveModel
	r.modelIndex = last
	for _, c := range r.auditCallers { // the records after last went with the failure, unacknowledged
		c.asked = min(c.asked, last)
	}
	for _, at := range []map[uint64]int64{r.recordAt, r.appendedAt} {
		for index := range at {
			if index > last {
				delete(at, index)
			}
		}
	}
	for index := range r.saved {
		if index > last {
			delete(r.saved, index)
		}
	}
	for index := range r.hashAt {
		if index > last {
			delete(r.hashAt, index)
		}
	}
	e := r.sh.Core().Machine()
	if err := checkMachine(r.model, e); err != nil {
		return fmt.Errorf("recovery to record %d: %w", last, err)
	}
	if h, ok := r.hashAt[last]; ok && h != e.Hash() {
		return fmt.Errorf("recovery to record %d: state hash differs from the live state's at that record", last)
	}
	r.hashAt[last] = e.Hash()
	for request, user := range r.ackedEntries {
		if v, found := e.EntryByRequest(request); !found || v.UserID != user {
			return fmt.Errorf("recovery: acknowledged entry %s of %s not reproduced", request, user)
		}
	}
	for request, q := range r.ackedReqs {
		got, found := e.Lookup(request)
		if !found || (got.Outcome == sku.OutcomeSoldOut) != q.soldOut {
			return fmt.Errorf("recovery: acknowledged reply to request_id %s (sold out %v) not reproduced: %s", request, q.soldOut, got.Outcome)
		}
	}
	res, err := recovery.Plan(log, r.snaps, recovery.Options{CampaignID: campaignID, SKUID: r.skuID})
	if err != nil {
		return fmt.Errorf("replica: %w", err)
	}
	r.replica, r.replicaAt = res.Machine, last
	if r.hooks.recovered != nil {
		r.hooks.recovered(e)
	}
	return nil
}

// decide decides one call on the shell and the same call on the model,
// and compares the reply and the number of records written.
func (r *run) decide(c *core.Call, predict func() modelReply) error {
	if r.sh.Failed() != nil {
		r.sh.Decide(r.t(), c)
		if !errors.Is(c.Err, core.ErrUnavailable) {
			return fmt.Errorf("%s on a failed SKU: %v, want ErrUnavailable", c.Kind, c.Err)
		}
		return nil
	}
	before := len(r.sh.Core().Ready().Records)
	r.model.effects = 0
	r.sh.Decide(r.t(), c)
	want := predict()
	if wrote := len(r.sh.Core().Ready().Records) - before; wrote != r.model.effects {
		return fmt.Errorf("%s wrote %d records, the model %d", c.Kind, wrote, r.model.effects)
	}
	if err := r.checkDecided(c, want); err != nil {
		return fmt.Errorf("%s %s/%s seq %d: %w", c.Kind, c.RequestID, c.UserID, c.Seq, err)
	}
	r.countReply(c)
	r.restsOn[c] = r.modelIndex
	return nil
}

// countReply counts a decided reply by kind and outcome.
func (r *run) countReply(c *core.Call) {
	outcome := c.Result.Outcome.String()
	switch c.Kind {
	case core.KindPause, core.KindResume, core.KindDefine, core.KindDraw, core.KindGrant, core.KindReturn, core.KindEpoch:
		outcome = c.Outcome.String()
	case core.KindCell:
		outcome = "report"
	case core.KindGet, core.KindLookup, core.KindEntry:
		outcome = "found"
		if !c.Found {
			outcome = "not found"
		}
	}
	if c.Result.Duplicate || c.Entry.Duplicate {
		outcome += " (duplicate)"
	}
	r.replies[c.Kind.String()+" "+outcome]++
}

// checkDecided compares the reply Decide gave with the model's.
func (r *run) checkDecided(c *core.Call, want modelReply) error {
	switch c.Kind {
	case core.KindEnter, core.KindDraw, core.KindEntry:
		return checkLotteryReply(c, want)
	case core.KindPause, core.KindResume, core.KindDefine, core.KindGrant, core.KindReturn, core.KindEpoch:
		if c.Kind == core.KindReturn && c.Cell.Alloc.Units() != uint64(want.seq) {
			return fmt.Errorf("returned %d units, model %d", c.Cell.Alloc.Units(), want.seq)
		}
		if c.Outcome != want.outcome || (c.Err != nil) != (want.outcome == sku.OutcomeInvalid) {
			return fmt.Errorf("answered %s (err %v), model %s", c.Outcome, c.Err, want.outcome)
		}
		return nil
	case core.KindCell:
		return checkCellReport(r.model, c.Report.Cell)
	case core.KindGet:
		if c.Found != (want.seq != 0) {
			return fmt.Errorf("found %v, model %v", c.Found, want.seq != 0)
		}
		if c.Found {
			return checkView(r.model, c.Seq, c.Result.Reservation)
		}
		return nil
	case core.KindLookup:
		if c.Found != (want.outcome != sku.OutcomeNone) {
			return fmt.Errorf("found %v, model %s", c.Found, want.outcome)
		}
		if c.Found && c.Result.Outcome != want.outcome {
			return fmt.Errorf("looked up %s, model %s", c.Result.Outcome, want.outcome)
		}
		if want.seq != 0 {
			return checkView(r.model, want.seq, c.Result.Reservation)
		}
		return nil
	}
	return checkReply(r.model, want, c.Result)
}

// advance ends the round of calls decided: the shell appends its records
// and hands its calls to the log.
func (r *run) advance() error {
	r.sh.Commit(r.t())
	return r.afterInput()
}

// afterInput ends each input to the shell: it brings back the log
// failures that releases reported (shell.Shell.LogFailed), checks a
// recovery the input made, and runs the checks that watch every input.
func (r *run) afterInput() error {
	for len(r.inputs) > 0 {
		in := r.inputs[0]
		r.inputs = r.inputs[1:]
		r.sh.LogFailed(r.t(), in.log, in.err)
	}
	if r.failure != nil {
		return r.failure
	}
	if err := r.checkBackoff(r.recovery); err != nil {
		return err
	}
	if rec := r.recovery; rec != nil {
		r.recovery = nil
		if rec.Err != nil {
			if !errors.Is(rec.Err, errInjected) {
				return fmt.Errorf("recovery in place: %w", rec.Err)
			}
			// An injected fault hit the reopening: the core waits and
			// tries again (or, after a failed fsync, waits for a restart).
		} else if err := r.recovered(); err != nil {
			return err
		}
	}
	if c := r.sh.Core(); r.sh.Failed() == nil && len(c.Ready().Records) == 0 {
		r.hashAt[c.LastIndex()] = c.Machine().Hash()
	}
	if r.sh.RecoveryWaits() {
		r.faults["recovery_waits_for_snapshot"]++
	}
	if err := r.exec.check(); err != nil {
		return err
	}
	return r.checkTruncation()
}

// flush is group commit: write and fsync the pending records, then release
// the replies they make durable (acknowledged), or fail them.
func (r *run) flush() error {
	log := r.sh.Log()
	if log == nil {
		return nil
	}
	r.storeClock = r.now
	err := log.Flush() // a failure reaches the shell through the batches' releases
	r.now = max(r.now, r.storeClock)
	if err := r.afterInput(); err != nil {
		return err
	}
	if err != nil || r.sh.Failed() != nil {
		return nil
	}
	durable := log.DurableIndex()
	for index := range r.saved {
		if index < durable {
			delete(r.saved, index)
		}
	}
	return r.checkReplica()
}

// acknowledge notes a reply released to its caller.
func (r *run) acknowledge(c *core.Call, index uint64) {
	for i := range c.Items { // a batch: each reserve is acknowledged
		r.acknowledge(&c.Items[i], index)
	}
	r.acked = max(r.acked, index)
	if c.Kind == core.KindEnter && c.Entry.Outcome == sku.OutcomeEntered {
		r.ackedEntries[c.Entry.Entry.RequestID] = c.Entry.Entry.UserID // a repeat by user answers the first entry
	}
	// A celled SKU's SOLD_OUT is not recorded (model_cells.go): nothing to reproduce.
	recordedSoldOut := c.Result.Outcome == sku.OutcomeSoldOut && r.def.Cell == ""
	if c.Kind == core.KindReserve && (c.Result.Outcome == sku.OutcomeAccepted || recordedSoldOut) {
		r.ackedReqs[c.RequestID] = modelRequest{user: c.UserID, soldOut: c.Result.Outcome == sku.OutcomeSoldOut}
	}
}

// checkReplica replays the records made durable since the last check into
// the replica and compares it with the live state.
func (r *run) checkReplica() error {
	log := r.sh.Log()
	if r.sh.Failed() != nil || log.DurableIndex() != r.sh.Core().LastIndex() || len(r.sh.Core().Ready().Records) > 0 {
		return nil
	}
	last, err := recovery.Replay(log, r.replica, r.replicaAt+1)
	if err != nil {
		return fmt.Errorf("replica: replay from %d: %w", r.replicaAt+1, err)
	}
	if last > r.replicaAt {
		r.replicaAt = last
	}
	if r.replicaAt != r.sh.Core().LastIndex() {
		return fmt.Errorf("replica: replayed to %d, the log is durable to %d", r.replicaAt, r.sh.Core().LastIndex())
	}
	if r.replica.Hash() != r.sh.Core().Machine().Hash() {
		return fmt.Errorf("replay of the durable log to record %d differs from the live state", r.replicaAt)
	}
	return nil
}

// crash is a power loss: the process is gone with what it had not made
// durable (its shell, the jobs its executor held, the replies waiting),
// the disk keeps what its rules say, and a new process recovers.
func (r *run) crash() error {
	r.faults["crash"]++
	r.sh = nil // no Stop: the process died
	r.exec.jobs = nil
	r.inputs = nil
	r.auditCallers, r.auditKept, r.auditNotBefore = nil, nil, 0 // the callers and the cool-down die with the process
	r.slots = truncationSlots{}
	clear(r.restsOn)
	r.storeFaults = storeFaults{counts: r.faults}
	r.snaps.failWrite = false
	r.walDir.crash(r.rng, r.faults)
	return r.start()
}

// final flushes and checks the whole history once more: every snapshot
// and the log verified by the recovery plan.
func (r *run) final() error {
	if err := r.finishSnapshots(); err != nil {
		return err
	}
	if r.sh.Failed() != nil {
		return nil
	}
	if err := r.flush(); err != nil {
		return err
	}
	if r.sh.Failed() != nil {
		return nil
	}
	res, err := recovery.Plan(r.sh.Log(), r.snaps, recovery.Options{CampaignID: campaignID, SKUID: r.skuID, Verify: true})
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	if len(res.Problems) > 0 {
		return fmt.Errorf("verify: %v", res.Problems)
	}
	if res.Machine.Hash() != r.sh.Core().Machine().Hash() {
		return fmt.Errorf("verify: the state rebuilt from snapshots and log differs from the live state")
	}
	return nil
}
