package cells

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/ledger"
)

// Engine is what the agent needs of a cell's engine (*actors.Engine).
type Engine interface {
	Grant(ctx context.Context, campaignID, skuID string, a sku.Allocation) error
	Return(ctx context.Context, campaignID, skuID string, seq, epoch uint64, units uint32) (sku.Allocation, error)
	SetEpoch(ctx context.Context, campaignID, skuID string, epoch uint64) error
	Cell(ctx context.Context, campaignID, skuID string) (core.CellReport, error)
}

// AgentLedger is what an agent needs of the quota ledger: *ledger.Ledger
// over etcd in production, *ledger.Memory (behind faults) in the simulator.
type AgentLedger interface {
	EpochBumper
	Allocate(ctx context.Context, s ledger.SKU, cell string, seq, epoch uint64, units uint32) (ledger.Allocation, error)
	Credit(ctx context.Context, s ledger.SKU, cell string, epoch uint64, ret ledger.Allocation) error
	Allocations(ctx context.Context, s ledger.SKU, cell string) ([]ledger.Allocation, error)
	Returns(ctx context.Context, s ledger.SKU, cell string) ([]ledger.Allocation, error)
	ReturnRequest(ctx context.Context, s ledger.SKU, cell string) (ledger.ReturnRequest, bool, error)
	MarkLog(ctx context.Context, s ledger.SKU, cell string, epoch uint64) error
	LogMarked(ctx context.Context, s ledger.SKU, cell string) (bool, error)
}

var _ AgentLedger = (*ledger.Ledger)(nil)

// AgentConfig configures an Agent. Durations are wall-clock.
type AgentConfig struct {
	Engine Engine
	Ledger AgentLedger
	SKU    ledger.SKU
	Cell   string
	// Epoch is the process's epoch of the cell, shared by the agents of
	// all its celled SKUs (nil: the agent takes one of its own, for a
	// process with a single celled SKU).
	Epoch *CellEpoch
	// Chunk is the units one top-up asks for (0: the ledger's chunk).
	Chunk uint32
	// LowWater: a top-up starts when available falls below it (default
	// Chunk/2, or 25 with the ledger's chunk; at least 1).
	LowWater uint32
	// OpTimeout bounds one etcd operation (default 2 s): past it the
	// outcome is unknown and the same operation is retried.
	OpTimeout time.Duration
	// Interval is the period of the agent's loop (default 100 ms).
	Interval time.Duration
	// MaxBackoff bounds the wait between retries while etcd does not
	// answer (default 2 s), and is how often a cell whose log of the SKU
	// was lost reads the ledger for its write-off.
	MaxBackoff time.Duration
	// ExhaustedRecheck is how long a cell that found the ledger
	// exhausted waits before it asks again (default 1 s), doubled at each
	// answer "exhausted" up to 16 times it: only another cell's return
	// can refill the ledger, and asking every Interval cost each sold-out
	// SKU twenty etcd transactions a second per cell.
	ExhaustedRecheck time.Duration
	// ReturnPoll is how often the agent reads its return request (default
	// 1 s): an operator's request waits at most that long, and a cell of
	// many SKUs does not read etcd ten times a second for each.
	ReturnPoll time.Duration
	// Clock is the time the agent's decisions read (the exhausted
	// ledger's recheck, the return request's poll); default time.Now.
	Clock  func() time.Time
	Logger *slog.Logger
}

func (c *AgentConfig) fill() {
	if c.OpTimeout <= 0 {
		c.OpTimeout = 2 * time.Second
	}
	if c.Interval <= 0 {
		c.Interval = 100 * time.Millisecond
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 2 * time.Second
	}
	if c.ExhaustedRecheck <= 0 {
		c.ExhaustedRecheck = time.Second
	}
	if c.ReturnPoll <= 0 {
		c.ReturnPoll = time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Epoch == nil {
		c.Epoch = NewCellEpoch(c.Ledger, c.Cell)
	}
}

// ErrForeignDataDir: the SKU's log belongs to another cell (its DEFINE names
// it), or is not celled: a data dir started under the wrong --cell.
var ErrForeignDataDir = errors.New("cells: the data dir belongs to another cell")

// Agent keeps one cell's share of a celled SKU in step with the ledger,
// off the request path: at start it takes the process's epoch of the cell
// (CellEpoch: bumped once per process, fencing any earlier process out of
// the ledger), records it and marks the log in the ledger (MarkLog; a
// log without an EPOCH whose mark exists was lost, and is granted
// nothing: see takeEpoch), then adds every
// allocation the ledger has that the log lacks, credits every logged
// return the ledger lacks, and from then on tops the pool up when it runs
// low and answers return requests. A top-up whose outcome is unknown is
// retried with the same seq until the ledger answers; no later seq is used
// before. While etcd does not answer the cell sells what its log holds.
type Agent struct {
	cfg AgentConfig

	// phase is where Step is: taking the epoch, reconciling, the loop.
	phase agentPhase
	// backoff is the wait after the next failed turn.
	backoff time.Duration

	epoch uint64 // 0 until the bump succeeded; then only the loop's goroutine writes it
	// inFlight is the seq of a top-up asked for and not answered yet (0:
	// none): it is retried as it is, never replaced by a later seq.
	inFlight uint64
	// exhaustedAt is when the ledger last answered that nothing is left
	// (only the loop's goroutine reads and writes it).
	exhaustedAt time.Time
	// exhaustedWait is how long after exhaustedAt the next ask comes.
	exhaustedWait time.Duration
	// returnsReadAt is when the return request was last read.
	returnsReadAt time.Time
	// granted: the last step's top-up was granted (the loop's goroutine
	// only); the loop then steps again without waiting.
	granted   bool
	pending   atomic.Bool
	reachable atomic.Bool
	exhausted atomic.Bool
	// logLost: the log of the SKU holds no EPOCH but the ledger marks it
	// as having recorded one (the data dir that sold is lost); the agent
	// grants nothing until the operator writes the cell's quota off.
	logLost atomic.Bool
	// writtenOff: the ledger answered that the cell's quota of the SKU
	// was written off; no top-up will ever come.
	writtenOff atomic.Bool

	mu    sync.Mutex
	stats AgentStats
}

// AgentStats counts an agent's ledger work.
type AgentStats struct {
	Epoch         uint64 `json:"epoch"`
	TopUps        uint64 `json:"top_ups"`         // allocations granted by this process
	TopUpRetries  uint64 `json:"top_up_retries"`  // attempts that ended without an answer (its reconciliation's or its allocation's)
	Reconciled    uint64 `json:"reconciled"`      // allocations found in etcd, missing from the log
	Credits       uint64 `json:"credits"`         // returns credited to the ledger
	LedgerErrors  uint64 `json:"ledger_errors"`   // etcd operations that failed
	LastLedgerErr string `json:"last_ledger_err"` // the latest of them
	EngineErrors  uint64 `json:"engine_errors"`   // calls of the cell's engine that failed (reportingEngine)
	LastEngineErr string `json:"last_engine_err"` // the latest of them
}

// NewAgent checks cfg and returns an agent; Run starts it.
func NewAgent(cfg AgentConfig) (*Agent, error) {
	cfg.fill()
	if cfg.Engine == nil || cfg.Ledger == nil || !sku.ValidID(cfg.Cell) {
		return nil, fmt.Errorf("cells: agent needs an engine, a ledger and a valid cell (got %q)", cfg.Cell)
	}
	a := &Agent{cfg: cfg, backoff: cfg.Interval}
	a.cfg.Engine = reportingEngine{Engine: cfg.Engine, a: a}
	return a, nil
}

// TopUpPending reports whether a top-up is asked for and not yet granted:
// an empty cell then answers SOLD_OUT with Retry-After.
func (a *Agent) TopUpPending() bool { return a.pending.Load() }

// ExpectsTopUp reports whether an empty cell should tell its buyers to
// retry: a top-up is pending, or the ledger was not found exhausted at the
// last top-up (an empty cell asks for one within an Interval). False only
// once the ledger answered that nothing is left: the cell's SOLD_OUT then
// holds until a return (still never final: another cell may return units).
// False too while the log is lost (LogLost) and once the cell's quota was
// written off: no top-up will come.
func (a *Agent) ExpectsTopUp() bool {
	return !a.logLost.Load() && !a.writtenOff.Load() && (a.pending.Load() || !a.exhausted.Load())
}

// LogLost reports whether the agent refuses to grant the SKU because its
// log was lost (the ledger marks the cell's log as having recorded an
// EPOCH, and this log holds none) and the cell's quota of it is not
// written off yet.
func (a *Agent) LogLost() bool { return a.logLost.Load() }

// LedgerReachable reports whether the last etcd operation answered.
func (a *Agent) LedgerReachable() bool { return a.reachable.Load() }

// Exhausted reports whether the ledger had nothing left at the last top-up.
func (a *Agent) Exhausted() bool { return a.exhausted.Load() }

// Stats returns a copy of the counters.
func (a *Agent) Stats() AgentStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats
}

func (a *Agent) count(f func(*AgentStats)) {
	a.mu.Lock()
	f(&a.stats)
	a.mu.Unlock()
}

// ledgerFailed notes an etcd operation that did not answer (or failed).
func (a *Agent) ledgerFailed(what string, err error) {
	a.reachable.Store(false)
	a.count(func(s *AgentStats) { s.LedgerErrors++; s.LastLedgerErr = what + ": " + err.Error() })
	a.cfg.Logger.Warn("ledger operation failed; retrying", "cell", a.cfg.Cell, "op", what, "err", err)
}

func (a *Agent) op() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), a.cfg.OpTimeout)
}

// errLostAnswer is the fault point's error (fault_on.go).
var errLostAnswer = errors.New("cells: the top-up's answer was lost (fault injection)")

// Run drives the agent until ctx is done: Step, then the wait it asks
// for. It returns ledger.ErrFenced when another process took the cell's
// epoch (the caller stops topping up; the log still holds what it sold),
// or ledger.ErrWrittenOff when the cell's quota of the SKU was written off
// (a lost disk: a process started on a new data dir gets none of the old
// allocations). An agent whose log was lost (LogLost) runs on, granting
// nothing, until that write-off.
func (a *Agent) Run(ctx context.Context) error {
	for {
		wait, err := a.Step()
		if err != nil {
			return err
		}
		if wait == 0 {
			if ctx.Err() != nil {
				return nil
			}
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// agentPhase is where an agent's Step is.
type agentPhase uint8

const (
	// phaseEpoch: nothing is asked of the ledger before the epoch is ours.
	phaseEpoch agentPhase = iota
	// phaseReconcile: what etcd granted and the log lacks (a crash
	// between a top-up's commit and its GRANT) is logged at start, not at
	// the next top-up.
	phaseReconcile
	// phaseLoop: reconcile, credit, top up, answer return requests.
	phaseLoop
)

// Step runs one turn of the agent and returns how long to wait before
// the next (Run waits on the wall clock; the simulator on its own). A
// turn that fails waits a backoff, doubled at each failure up to
// MaxBackoff. A non-nil error ends the agent: ledger.ErrFenced or
// ledger.ErrWrittenOff. Not safe for concurrent use.
func (a *Agent) Step() (time.Duration, error) {
	switch a.phase {
	case phaseEpoch:
		err := a.takeEpoch()
		switch {
		case errors.Is(err, errLogLost):
			return a.cfg.MaxBackoff, nil
		case errors.Is(err, ledger.ErrWrittenOff):
			a.logWrittenOff()
			return 0, err
		case errors.Is(err, ledger.ErrFenced):
			a.logFenced(err)
			return 0, err
		case err != nil:
			return a.failed(), nil
		}
		a.phase, a.backoff = phaseReconcile, a.cfg.Interval
		return 0, nil
	case phaseReconcile:
		if _, err := a.reconcile(); err != nil {
			if errors.Is(err, ledger.ErrWrittenOff) {
				a.logWrittenOff()
				return 0, err
			}
			return a.failed(), nil
		}
		a.phase, a.backoff = phaseLoop, a.cfg.Interval
		return 0, nil
	}
	err := a.step()
	switch {
	case errors.Is(err, ledger.ErrFenced):
		a.logFenced(err)
		return 0, err
	case errors.Is(err, ledger.ErrWrittenOff):
		a.logWrittenOff()
		return 0, err
	case err != nil:
		return a.failed(), nil
	}
	a.backoff = a.cfg.Interval
	if a.granted {
		// A chunk came: look again at once, so that a cell drained
		// faster than one chunk per Interval tops up at etcd's pace.
		a.granted = false
		return 0, nil
	}
	return a.cfg.Interval, nil
}

// failed returns the wait after a failed turn and doubles the next.
func (a *Agent) failed() time.Duration {
	d := a.backoff
	a.backoff = min(2*a.backoff, a.cfg.MaxBackoff)
	return d
}

func (a *Agent) logFenced(err error) {
	a.cfg.Logger.Error("cell fenced: another process holds its epoch; no more top-ups", "cell", a.cfg.Cell, "err", err)
}

// logWrittenOff notes that the cell's quota was written off.
func (a *Agent) logWrittenOff() {
	a.writtenOff.Store(true)
	a.logLost.Store(false)
	a.cfg.Logger.Error("the cell's quota of this SKU was written off (a lost disk): no more top-ups", "cell", a.cfg.Cell,
		"campaign_id", a.cfg.SKU.Campaign, "sku_id", a.cfg.SKU.SKU)
}

// errLogLost: the SKU's log holds no EPOCH, and the ledger marks the
// cell's log of it as having recorded one (takeEpoch).
var errLogLost = errors.New("cells: the cell's log of the SKU was lost")

// takeEpoch takes the process's epoch of the cell (bumped in the ledger
// once per process), records it, and marks the cell's log of the SKU in
// the ledger, before any GRANT. A log that holds no EPOCH yet is first
// checked against that mark: the mark there means a log of this cell
// recorded an EPOCH, maybe sold, and is not this one (the data dir was
// lost, or the cell started on a fresh volume). The allocations the
// ledger lists for the cell were then sold in the lost log, and granting
// them here would sell them twice: errLogLost, and nothing is recorded.
// The check comes after the bump, so no earlier process of the cell can
// create the mark after it was read (MarkLog is fenced by the epoch).
func (a *Agent) takeEpoch() error {
	ctx, cancel := a.op()
	defer cancel()
	e, err := a.cfg.Epoch.Take(ctx)
	if err != nil {
		a.ledgerFailed("bump epoch", err)
		return err
	}
	a.reachable.Store(true)
	a.count(func(s *AgentStats) { s.Epoch = e })
	rep, err := a.cfg.Engine.Cell(ctx, a.cfg.SKU.Campaign, a.cfg.SKU.SKU)
	if err != nil {
		return err
	}
	if rep.Epoch == 0 {
		if err := a.checkLogMark(ctx); err != nil {
			return err
		}
	}
	if err := a.cfg.Engine.SetEpoch(ctx, a.cfg.SKU.Campaign, a.cfg.SKU.SKU, e); err != nil {
		return err
	}
	if err := a.cfg.Ledger.MarkLog(ctx, a.cfg.SKU, a.cfg.Cell, e); err != nil {
		if !errors.Is(err, ledger.ErrFenced) && !errors.Is(err, ledger.ErrWrittenOff) {
			a.ledgerFailed("mark log", err)
		}
		return err
	}
	a.epoch = e
	a.cfg.Logger.Info("cell epoch taken", "cell", a.cfg.Cell, "epoch", e)
	return nil
}

// checkLogMark answers errLogLost when the ledger marks the cell's log of
// the SKU as having recorded an EPOCH (the caller's log holds none), and
// logs that once, with what the operator does about it.
func (a *Agent) checkLogMark(ctx context.Context) error {
	marked, err := a.cfg.Ledger.LogMarked(ctx, a.cfg.SKU, a.cfg.Cell)
	switch {
	case errors.Is(err, ledger.ErrWrittenOff):
		return err
	case err != nil:
		a.ledgerFailed("read log mark", err)
		return err
	case !marked:
		return nil
	}
	if !a.logLost.Swap(true) {
		a.cfg.Logger.Error("the cell's log of this SKU was lost: etcd marks it as having logged an EPOCH, and this data dir holds none "+
			"(a lost disk, or the cell started on a fresh volume); the tokens granted to the cell were sold in that log, so it grants and sells nothing of this SKU. "+
			"Write off the cell's quota of it (seckillctl cells write-off, docs/cells.md)",
			"cell", a.cfg.Cell, "campaign_id", a.cfg.SKU.Campaign, "sku_id", a.cfg.SKU.SKU,
			"command", fmt.Sprintf("seckillctl cells write-off --etcd E --campaign %s --sku %s --cell %s", a.cfg.SKU.Campaign, a.cfg.SKU.SKU, a.cfg.Cell))
	}
	return errLogLost
}

// step is one turn of the loop.
func (a *Agent) step() error {
	ctx, cancel := a.op()
	defer cancel()
	rep, err := a.cfg.Engine.Cell(ctx, a.cfg.SKU.Campaign, a.cfg.SKU.SKU)
	if err != nil {
		return err
	}
	low := a.cfg.LowWater
	if low == 0 {
		low = max(a.cfg.Chunk/2, 1)
		if a.cfg.Chunk == 0 {
			low = 25
		}
	}
	// A top-up whose answer was lost is finished with its seq even when
	// stock came back meanwhile (cancels, expiries): its allocation may
	// stand in the ledger, and must reach the log, not wait for the next
	// need (found by cells/clustertest: "holds 2400 per its log, 2450 per
	// the ledger").
	now := a.cfg.Clock()
	recheck := a.inFlight != 0 || !a.exhausted.Load() || now.Sub(a.exhaustedAt) >= a.exhaustedWait
	if (rep.Counts.Available < low && recheck) || a.inFlight != 0 {
		if err := a.topUp(low); err != nil {
			return err
		}
	} else {
		a.pending.Store(false)
	}
	if err := a.creditLogged(rep); err != nil {
		return err
	}
	if now.Sub(a.returnsReadAt) < a.cfg.ReturnPoll {
		return nil
	}
	if err := a.answerReturnRequest(rep); err != nil {
		return err
	}
	a.returnsReadAt = a.cfg.Clock()
	return nil
}

// reconcile hands every allocation of the cell the ledger has to the
// engine, which logs those its log lacks (GRANT is idempotent by seq, so
// the others write nothing), and returns the highest seq either knows.
func (a *Agent) reconcile() (uint64, error) {
	ctx, cancel := a.op()
	defer cancel()
	allocs, err := a.cfg.Ledger.Allocations(ctx, a.cfg.SKU, a.cfg.Cell)
	if err != nil {
		if !errors.Is(err, ledger.ErrWrittenOff) {
			a.ledgerFailed("list allocations", err)
		}
		return 0, err
	}
	a.reachable.Store(true)
	rep, err := a.cfg.Engine.Cell(ctx, a.cfg.SKU.Campaign, a.cfg.SKU.SKU)
	if err != nil {
		return 0, err
	}
	logged := map[uint64]bool{}
	var top uint64
	for _, g := range rep.Grants {
		logged[g.Seq] = true
		top = max(top, g.Seq)
	}
	for _, al := range allocs {
		top = max(top, al.Seq)
		if err := a.cfg.Engine.Grant(ctx, a.cfg.SKU.Campaign, a.cfg.SKU.SKU, al.SKUAllocation()); err != nil {
			return 0, err
		}
		if !logged[al.Seq] {
			a.count(func(s *AgentStats) { s.Reconciled++ })
		}
	}
	return top, nil
}

// topUp asks the ledger for one chunk. A new top-up first reconciles
// (what etcd has, the log gets) and takes seq max(ledger, log) + 1; a
// top-up whose outcome is unknown is asked again with that same seq until
// the ledger answers, and the ledger answers a seq it holds with the
// allocation it made.
func (a *Agent) topUp(low uint32) error {
	a.pending.Store(true)
	if a.inFlight == 0 {
		top, err := a.reconcile()
		if err != nil {
			if !errors.Is(err, ledger.ErrWrittenOff) {
				a.count(func(s *AgentStats) { s.TopUpRetries++ })
			}
			return err
		}
		// What the ledger had and the log lacked may be enough (the
		// initial grant at a first start).
		ctx, cancel := a.op()
		rep, err := a.cfg.Engine.Cell(ctx, a.cfg.SKU.Campaign, a.cfg.SKU.SKU)
		cancel()
		if err != nil {
			return err
		}
		if rep.Counts.Available >= low {
			a.pending.Store(false)
			return nil
		}
		a.inFlight = top + 1
	}
	ctx, cancel := a.op()
	defer cancel()
	al, err := a.cfg.Ledger.Allocate(ctx, a.cfg.SKU, a.cfg.Cell, a.inFlight, a.epoch, a.cfg.Chunk)
	switch {
	case errors.Is(err, ledger.ErrExhausted):
		a.reachable.Store(true)
		if a.exhausted.Swap(true) {
			a.exhaustedWait = min(2*a.exhaustedWait, 16*a.cfg.ExhaustedRecheck)
		} else {
			a.exhaustedWait = a.cfg.ExhaustedRecheck
		}
		a.exhaustedAt = a.cfg.Clock()
		a.pending.Store(false)
		a.inFlight = 0
		return nil
	case errors.Is(err, ledger.ErrFenced), errors.Is(err, ledger.ErrWrittenOff):
		return err
	case err != nil:
		// Unreachable first: whoever sees the retry counted sees it too.
		a.ledgerFailed("allocate", err)
		a.count(func(s *AgentStats) { s.TopUpRetries++ })
		if mutantNoReadBack {
			a.inFlight++
		}
		return err
	}
	if loseTopUpAnswer(a.cfg.Cell) {
		a.ledgerFailed("allocate", errLostAnswer)
		a.count(func(s *AgentStats) { s.TopUpRetries++ })
		return errLostAnswer
	}
	a.reachable.Store(true)
	a.exhausted.Store(false)
	if err := a.cfg.Engine.Grant(ctx, a.cfg.SKU.Campaign, a.cfg.SKU.SKU, al.SKUAllocation()); err != nil {
		return err
	}
	a.inFlight = 0
	a.granted = true
	a.count(func(s *AgentStats) { s.TopUps++ })
	a.pending.Store(false)
	return nil
}

// creditLogged credits every RETURN in the log the ledger lacks (a crash
// or a partition between the record and the credit).
func (a *Agent) creditLogged(rep core.CellReport) error {
	if len(rep.Returns) == 0 {
		return nil
	}
	ctx, cancel := a.op()
	defer cancel()
	credited, err := a.cfg.Ledger.Returns(ctx, a.cfg.SKU, a.cfg.Cell)
	if err != nil {
		a.ledgerFailed("list returns", err)
		return err
	}
	done := map[uint64]bool{}
	for _, r := range credited {
		done[r.Seq] = true
	}
	for _, r := range rep.Returns {
		if done[r.Seq] {
			continue
		}
		if err := a.credit(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

func (a *Agent) credit(ctx context.Context, r sku.Allocation) error {
	err := a.cfg.Ledger.Credit(ctx, a.cfg.SKU, a.cfg.Cell, a.epoch,
		ledger.Allocation{Cell: a.cfg.Cell, Seq: r.Seq, Epoch: r.Epoch, Ranges: r.Ranges})
	if err != nil {
		if !errors.Is(err, ledger.ErrFenced) && !errors.Is(err, ledger.ErrWrittenOff) {
			a.ledgerFailed("credit", err)
		}
		return err
	}
	a.count(func(s *AgentStats) { s.Credits++ })
	return nil
}

// answerReturnRequest logs and credits the return the control plane asked
// for, if it is new: RETURN first (durable), then the credit.
func (a *Agent) answerReturnRequest(rep core.CellReport) error {
	ctx, cancel := a.op()
	defer cancel()
	req, found, err := a.cfg.Ledger.ReturnRequest(ctx, a.cfg.SKU, a.cfg.Cell)
	if errors.Is(err, ledger.ErrCorrupt) {
		a.reachable.Store(true)
		a.cfg.Logger.Warn("ignoring a malformed return request", "cell", a.cfg.Cell, "err", err)
		return nil
	}
	if err != nil {
		a.ledgerFailed("read return request", err)
		return err
	}
	a.reachable.Store(true)
	if !found {
		return nil
	}
	for _, r := range rep.Returns {
		if r.Seq == req.ID {
			return nil // answered (and credited by creditLogged)
		}
	}
	if plantedCreditBeforeReturn {
		return a.plantedCredit(ctx, rep, req)
	}
	ret, err := a.cfg.Engine.Return(ctx, a.cfg.SKU.Campaign, a.cfg.SKU.SKU, req.ID, a.epoch, req.Units)
	if err != nil {
		return err
	}
	if len(ret.Ranges) == 0 {
		return nil // nothing available: nothing logged, nothing to credit
	}
	return a.credit(ctx, ret)
}

// plantedCredit is the planted bug's return: the tail of the latest grant
// credited with no RETURN logged (planted_on.go).
func (a *Agent) plantedCredit(ctx context.Context, rep core.CellReport, req ledger.ReturnRequest) error {
	if len(rep.Grants) == 0 {
		return nil
	}
	rs := rep.Grants[len(rep.Grants)-1].Ranges
	last := rs[len(rs)-1]
	n := min(req.Units, last.Units())
	return a.credit(ctx, sku.Allocation{Seq: req.ID, Epoch: a.epoch, Ranges: []sku.TokenRange{{First: last.Last - n + 1, Last: last.Last}}})
}
