package sim

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/recovery"
	"github.com/seckill/seckill/snapshot"
	"github.com/seckill/seckill/wal"
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
	// Mode is the kind of history; the shrinker shrinks ModeSKU's only.
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
	for i, s := range history {
		if o.Keep != nil && !o.Keep[i] {
			continue
		}
		res.Steps++
		if o.Trace != nil {
			fmt.Fprintf(o.Trace, "step %d: %s\n", i, s)
		}
		if res.Err = r.protect(func() error { return r.step(s) }); res.Err != nil {
			res.Step = i
			return res
		}
	}
	res.Step = len(history)
	res.Err = r.protect(r.final)
	return res
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
	snaps       snapshot.Memory
	storeFaults storeFaults

	// The process: replaced at a crash.
	log     *wal.Log
	core    *core.Core
	snapJob *core.Snapshot // started by the core, not yet written
	waits   []wait
	buf     []byte

	// The model and the history it checks against.
	model      *model
	modelIndex uint64            // the log index of the model's last effect
	saved      map[uint64]*model // the model after each record not yet durable
	hashAt     map[uint64][32]byte
	recordAt   map[uint64]int64 // the decision time of each record appended
	acked      uint64           // the highest index an acknowledged reply rested on
	// restsOn is, for each call decided and not yet released, the last
	// record it rests on by the model's count: every record decided before
	// its reply, its own included.
	restsOn   map[*core.Call]uint64
	ackedReqs map[string]modelRequest
	replica   *sku.Machine // the durable log replayed, record by record
	replicaAt uint64

	// A lottery SKU's draw: the ranking the core asked for, computed
	// later (the shell's goroutine), and the entries acknowledged.
	rankJob      *core.Rank
	ackedEntries map[string]string // request_id -> user

	// skuID names the SKU: the constant skuID, or one SKU of a campaign
	// (campaign.go).
	skuID string
	// hooks, set by a campaign run (campaign.go), see what the shell does
	// as the actors shell shows it to the campaign's purchase registry.
	hooks runHooks

	// The workload.
	lottery  bool // the SKU is a lottery (step_lottery.go)
	users    int
	def      sku.Definition
	ledger   simLedger      // a celled SKU's quota ledger (cells_step.go)
	requests []modelRequest // request_ids sent, with their user (request in .request)
	reqIDs   []string
	// holders are the entry-pass holders of the request_ids sent (zero:
	// no pass), parallel to reqIDs: a resend carries the same pass.
	holders []sku.Holder
}

// runHooks let a campaign run (campaign.go) see one SKU's shell: the
// records a round appends, how far the log is durable, each recovery.
// All nil for a lone SKU.
type runHooks struct {
	purchaseLimit sku.PurchaseLimit
	celled        bool                                                     // a campaign run's SKUs, all celled or none
	lottery       bool                                                     // a campaign run's SKU sold by lottery
	records       func(m *sku.Machine, first uint64, records []sku.Record) // before they are appended
	durable       func(index uint64)                                       // before the replies are released
	recovered     func(m *sku.Machine)                                     // after a recovery, checked
}

// wait is a group of replies released once the log is durable up to index.
type wait struct {
	index uint64
	calls []*core.Call
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
		restsOn:      map[*core.Call]uint64{},
		ackedReqs:    map[string]modelRequest{},
		ackedEntries: map[string]string{},
	}
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
func (r *run) protect(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return fn()
}

func (r *run) t() time.Time { return time.UnixMilli(r.now) }

// coreConfig is the engine's configuration: small thresholds, so that a
// short history snapshots and recovers often.
func (r *run) coreConfig() core.Config {
	return core.Config{
		Rand:            rngReader{r},
		SnapshotEvery:   uint64(8 + r.seed%32),
		LogFailureRetry: 2 * time.Second,
	}
}

// rngReader reads the step's PRNG (the reservation id key).
type rngReader struct{ r *run }

func (g rngReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(g.r.rng.Uint32())
	}
	return len(p), nil
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
	r.lottery = r.seed%5 == 4 && r.hooks.purchaseLimit == sku.PurchaseLimitSKU || r.hooks.lottery
	r.def.PurchaseLimit = r.hooks.purchaseLimit
	if r.lottery {
		r.def.Lottery = lotteryRules(g, start)
		if t, _ := r.def.Lottery.Beacon.TimeMs(); r.def.EndAt <= t {
			r.def.EndAt = t + 60_000 // the draw comes before the sale ends
		}
	}
	r.core = core.New(r.coreConfig())
	if err := r.open(); err != nil {
		return err
	}
	if err := r.recovered(); err != nil {
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
	def := r.def
	c := &core.Call{Kind: core.KindDefine, Def: &def}
	if err := r.decide(c, func() modelReply { return modelReply{outcome: r.model.define(r.now, r.withSecrets(r.def))} }); err != nil {
		return err
	}
	if r.def.Cell != "" { // the cell's initial grant
		if err := r.cellCall(callSpec{kind: callRedefine, a: 2 * uint32(g.IntN(8)), b: 0}); err != nil {
			return err
		}
	}
	r.advance()
	return r.flush()
}

// open opens the log over the disk and recovers the Machine with the
// recovery plan, as a process start does.
func (r *run) open() error {
	store := openLogStore(r.walDir, segmentSize, &r.storeFaults, &r.now)
	log, err := wal.OpenOver("sim/wal", store, wal.Options{Stepped: true, SegmentSize: segmentSize, Logger: quiet})
	if err != nil {
		return fmt.Errorf("open the log: %w", err)
	}
	res, err := recovery.Plan(log, &r.snaps, recovery.Options{CampaignID: campaignID, SKUID: r.skuID})
	if err != nil {
		log.Close()
		return fmt.Errorf("recovery: %w", err)
	}
	r.log = log
	r.core.Recovered(r.t(), res.Machine, log.LastIndex(), res.Base.Index)
	return nil
}

// recovered checks the state a recovery rebuilt: nothing acknowledged is
// lost, nothing appears that the history did not decide, and the model
// goes back to the record the log now ends at.
func (r *run) recovered() error {
	last := r.log.LastIndex()
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
	for index := range r.recordAt {
		if index > last {
			delete(r.recordAt, index)
		}
	}
	e := r.core.Machine()
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
	res, err := recovery.Plan(r.log, &r.snaps, recovery.Options{CampaignID: campaignID, SKUID: r.skuID})
	if err != nil {
		return fmt.Errorf("replica: %w", err)
	}
	r.replica, r.replicaAt = res.Machine, last
	if r.hooks.recovered != nil {
		r.hooks.recovered(e)
	}
	return nil
}

// decide decides one call on the core and the same call on the model, and
// compares the reply and the number of records written.
func (r *run) decide(c *core.Call, predict func() modelReply) error {
	if r.core.Failed() != nil {
		r.core.Decide(r.t(), c)
		if !errors.Is(c.Err, core.ErrUnavailable) {
			return fmt.Errorf("%s on a failed SKU: %v, want ErrUnavailable", c.Kind, c.Err)
		}
		return nil
	}
	before := len(r.core.Ready().Records)
	r.model.effects = 0
	r.core.Decide(r.t(), c)
	want := predict()
	if wrote := len(r.core.Ready().Records) - before; wrote != r.model.effects {
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

// advance appends the round's records and does what the core asks.
func (r *run) advance() error {
	rd := r.core.Ready()
	if r.hooks.records != nil && len(rd.Records) > 0 {
		r.hooks.records(r.core.Machine(), rd.FirstIndex, rd.Records)
	}
	appended := 0
	var err error
	for i := range rd.Records {
		rec := &rd.Records[i]
		r.buf = rec.AppendPayload(r.buf[:0])
		var index uint64
		if index, err = r.log.Append(byte(rec.Type), r.buf); err != nil {
			break
		}
		if index != rd.FirstIndex+uint64(i) {
			return fmt.Errorf("record appended at %d, the core expected %d", index, rd.FirstIndex+uint64(i))
		}
		r.recordAt[index] = rec.At
		switch {
		case rec.Type == sku.RecordWon && rec.Lot.FromWaitlist:
			r.faults["lottery_promoted"]++
		case rec.Type == sku.RecordLotteryEnded:
			r.faults["lottery_ended"]++
		}
		appended++
	}
	complete := err == nil
	act := r.core.Advance(appended, err)
	for _, c := range act.Answer {
		if c.Err == nil {
			return fmt.Errorf("%s answered at once without an error", c.Kind)
		}
		delete(r.restsOn, c)
	}
	if act.Wait != nil {
		r.waits = append(r.waits, wait{index: act.Wait.Index, calls: slices.Clone(act.Wait.Calls)})
	}
	if complete && r.core.Failed() == nil {
		r.hashAt[r.core.LastIndex()] = r.core.Machine().Hash()
	}
	if act.Snapshot != nil {
		if r.snapJob != nil {
			return fmt.Errorf("a snapshot at %d started while the one at %d runs", act.Snapshot.Index, r.snapJob.Index)
		}
		r.snapJob = act.Snapshot // written later: the shell writes it beside the actor
	}
	if act.Rank != nil {
		r.rankJob = act.Rank // computed later: the shell ranks beside the actor
	}
	if act.Recover {
		return r.recoverInPlace()
	}
	return nil
}

// flush is group commit: write and fsync the pending records, then release
// the replies they make durable (acknowledged), or fail them.
func (r *run) flush() error {
	if r.log == nil {
		return nil
	}
	err := r.log.Flush()
	durable := r.log.DurableIndex()
	r.core.Durable(durable)
	if r.hooks.durable != nil {
		r.hooks.durable(durable) // before the replies are released, as the actors shell
	}
	var left []wait
	for _, w := range r.waits {
		if w.index > durable {
			left = append(left, w)
			continue
		}
		for _, c := range w.calls {
			rests := r.restsOn[c]
			delete(r.restsOn, c)
			if c.Err != nil {
				continue
			}
			if rests > durable {
				return fmt.Errorf("%s released with the log durable to %d, but its reply rests on record %d", c.Kind, durable, rests)
			}
			r.acknowledge(c, rests)
		}
	}
	r.waits = left
	if err != nil {
		for _, w := range r.waits {
			core.Settle(w.calls, err)
			for _, c := range w.calls {
				if c.Err == nil {
					return fmt.Errorf("%s released without an error after the log failed: %v", c.Kind, err)
				}
			}
		}
		r.waits = nil
		clear(r.restsOn)
		r.core.LogFailed(r.t(), err)
		return nil
	}
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
	if r.core.Failed() != nil || r.log.DurableIndex() != r.core.LastIndex() || len(r.core.Ready().Records) > 0 {
		return nil
	}
	last, err := recovery.Replay(r.log, r.replica, r.replicaAt+1)
	if err != nil {
		return fmt.Errorf("replica: replay from %d: %w", r.replicaAt+1, err)
	}
	if last > r.replicaAt {
		r.replicaAt = last
	}
	if r.replicaAt != r.core.LastIndex() {
		return fmt.Errorf("replica: replayed to %d, the log is durable to %d", r.replicaAt, r.core.LastIndex())
	}
	if r.replica.Hash() != r.core.Machine().Hash() {
		return fmt.Errorf("replay of the durable log to record %d differs from the live state", r.replicaAt)
	}
	return nil
}

// finishSnapshot writes the snapshot the core started (snapJob), as the
// actors shell's writer does while the actor goes on deciding: once the
// log is durable up to its index, from its frozen state. It checks it
// against the history, prunes the old ones and truncates the log they no
// longer need, and tells the core, which may start the next one.
func (r *run) finishSnapshot() error {
	s := r.snapJob
	if s == nil {
		return nil
	}
	r.snapJob = nil
	if r.log != nil && r.log.DurableIndex() < s.Index {
		if err := r.flush(); err != nil {
			return err
		}
	}
	if r.log == nil || r.log.DurableIndex() < s.Index {
		r.snapJob = r.core.SnapshotDone(r.t(), s.Index, fmt.Errorf("sim: the log failed before record %d was durable", s.Index)).Snapshot
		return nil
	}
	b, _, err := snapshot.Marshal(s.Frozen, s.Index, r.now)
	if err != nil {
		return fmt.Errorf("snapshot at %d: %w", s.Index, err)
	}
	_, m, err := snapshot.Decode(b)
	if err != nil {
		return fmt.Errorf("snapshot at %d does not decode: %w", s.Index, err)
	}
	if h, ok := r.hashAt[s.Index]; ok && h != m.Hash() {
		return fmt.Errorf("snapshot at %d (written %d records later) differs from the live state at that record",
			s.Index, r.core.LastIndex()-s.Index)
	}
	r.snaps.Put(s.Index, b)
	r.faults["snapshot"]++
	files, _ := r.snaps.List()
	for len(files) > snapshotKeep {
		r.snaps.Remove(files[0].Index)
		files = files[1:]
	}
	if cut, err := r.log.TruncateBefore(files[0].Index + 1); err != nil {
		r.core.LogFailed(r.t(), err)
	} else if cut > 0 {
		r.faults["log_truncated"]++
	}
	r.snapJob = r.core.SnapshotDone(r.t(), s.Index, nil).Snapshot
	return nil
}

// crash is a power loss: the process is gone with what it had not made
// durable, the disk keeps what its rules say, and a new process recovers.
func (r *run) crash() error {
	r.faults["crash"]++
	r.log = nil     // no Close: the process died
	r.snapJob = nil // its writer died with it
	r.rankJob = nil // and so did a ranking in progress
	r.waits = nil
	clear(r.restsOn)
	r.storeFaults = storeFaults{}
	r.walDir.crash(r.rng, r.faults)
	r.core = core.New(r.coreConfig())
	if err := r.open(); err != nil {
		return err
	}
	return r.recovered()
}

// recoverInPlace is the core's recovery after a log failure, without a
// restart: close the log, reopen it from the same disk (the page cache
// kept), rebuild the Machine.
func (r *run) recoverInPlace() error {
	r.faults["recovery_in_place"]++
	if r.log != nil {
		r.log.Close()
		r.log = nil
	}
	if r.snapJob != nil {
		r.faults["snapshot_unwritten"]++
		r.snapJob = nil // the shell stops its writer before it recovers
	}
	r.rankJob = nil // the recovered core asks again
	r.waits = nil
	clear(r.restsOn)
	if err := r.open(); err != nil {
		if !errors.Is(err, errInjected) {
			return err
		}
		// An injected fault hit the reopening: the core waits and tries
		// again (or, after a failed fsync, waits for a restart).
		r.core.RecoveryFailed(r.t(), err)
		return nil
	}
	return r.recovered()
}

// final flushes and checks the whole history once more: every snapshot
// and the log verified by the recovery plan.
func (r *run) final() error {
	if err := r.finishSnapshot(); err != nil {
		return err
	}
	if r.core.Failed() != nil {
		return nil
	}
	if err := r.flush(); err != nil {
		return err
	}
	if r.core.Failed() != nil {
		return nil
	}
	res, err := recovery.Plan(r.log, &r.snaps, recovery.Options{CampaignID: campaignID, SKUID: r.skuID, Verify: true})
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	if len(res.Problems) > 0 {
		return fmt.Errorf("verify: %v", res.Problems)
	}
	if res.Machine.Hash() != r.core.Machine().Hash() {
		return fmt.Errorf("verify: the state rebuilt from snapshots and log differs from the live state")
	}
	return nil
}
