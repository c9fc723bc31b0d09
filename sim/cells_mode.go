package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/shell"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/cells"
	"github.com/seckill/seckill/ledger"
)

// Cells mode: one celled SKU's engine (the SKU mode's run: its disk,
// shell, model and checks) whose grants, returns and epochs come from the
// cell's real agent (cells.Agent) over the quota ledger in memory
// (ledger.Memory, the etcd ledger's rules) behind faults (cells_ledger.go).
// The simulator is the agent's driver, as Run is in production: it calls
// Agent.Step when the wait Step asked for is over, with the simulated
// clock, and is the agent's engine (cellsEngine): each GRANT, RETURN and
// EPOCH is decided by the shell, checked against the model and answered
// once its record is durable, as the actor answers.
//
// Another cell shares the ledger (its top-ups and returns move tokens
// between the central pool and it), an operator asks for returns, another
// process of the cell now and then takes its epoch (the agent is fenced;
// the cell is restarted later), and every crash or restart of the SKU is
// the agent's process dying too: a new agent takes a new epoch.
//
// Checked after every step: the ledger's own invariants (ledger.State.Check:
// each token never granted, free or held by one cell; Σ held + free + never
// granted = sale_limit); every token the cell's log holds (its GRANTs less
// its RETURNs) is the cell's per the ledger, so no token is sold beyond the
// cell's grants; every GRANT in the log is an allocation the ledger made;
// every return the ledger credited is a RETURN in the log; the cell's
// allocations have seqs 1..n, none skipped; a log that holds a GRANT has
// its mark in the ledger (ledger.LogMark, made before the first GRANT); no allocation made after
// another process took the epoch carries an older epoch. At the end, with
// the faults healed and the agent run until it settles: the ledger's
// allocations of the cell are exactly the log's GRANTs, and its credited
// returns exactly the log's RETURNs.

// The cells of the ledger: the simulated one and another.
const (
	simCell   = "c1"
	otherCell = "c2"
)

// cellsRun is the cells mode's part of a run.
type cellsRun struct {
	r     *run
	sku   ledger.SKU
	mem   *ledger.Memory
	led   *faultyLedger
	agent *cells.Agent
	sh    *shell.Shell // the process the agent belongs to
	due   int64        // ms: when the agent's next turn is due
	ended error        // how the agent ended (fenced); nil while it runs
	chunk uint32

	// fence is the epoch another process took (0: none), and fenced the
	// seqs of the cell's allocations made before.
	fence  uint64
	fenced map[uint64]bool

	otherEpoch   uint64
	otherSeq     uint64
	otherReturns uint64
	returnID     uint64
}

// RunCells runs one cells-mode history: deterministic, like Run.
func RunCells(o Options) Result {
	r := newRun(o.Seed)
	r.hooks.celled = true
	c := &cellsRun{r: r, sku: ledger.SKU{Campaign: campaignID, SKU: r.skuID}, mem: ledger.NewMemory()}
	c.led = &faultyLedger{mem: c.mem, r: r}
	r.cells = c
	history := planCells(rand.New(rand.NewPCG(o.Seed, 0xce11)), o.Steps)
	res := Result{Seed: o.Seed, History: history, Faults: r.faults, Replies: r.replies, Step: -1, Mode: ModeCells}
	if res.Err = r.protect(c.setUp); res.Err != nil {
		return res
	}
	r.runSteps(o, &res, c.step, c.final)
	return res
}

// planCells draws a cells-mode history: the SKU mode's steps with the
// agent's turns, ledger faults, fencing, the other cell and return
// requests among them (each step's draws its own, so a prefix of a
// history is the history of fewer steps).
func planCells(g *rand.Rand, n int) []step {
	steps := plan(g, n)
	for i := range steps {
		kind := []stepKind{0, stepAgent, stepLedgerFault, stepFence, stepOtherCell, stepReturnRequest}[weighted(g, 50, 30, 8, 2, 6, 4)]
		if kind != 0 {
			steps[i] = step{kind: kind, dt: steps[i].dt, x: steps[i].x}
		}
	}
	return steps
}

// setUp defines the celled SKU, publishes its ledger with initial grants
// for both cells, and starts the agent.
func (c *cellsRun) setUp() error {
	r := c.r
	if err := r.setUp(); err != nil {
		return err
	}
	g := r.rng
	c.chunk = uint32(1 + g.IntN(6))
	limit := int(r.def.SaleLimit)
	initial := []ledger.InitialGrant{{Cell: simCell, Units: uint32(g.IntN(min(2*int(c.chunk), limit/2)))}, {Cell: otherCell, Units: uint32(g.IntN(limit / 4))}}
	if _, err := c.mem.Publish(context.Background(), c.sku, r.def.SaleLimit, c.chunk, initial); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	e, err := c.mem.BumpEpoch(context.Background(), otherCell)
	if err != nil {
		return err
	}
	c.otherEpoch, c.otherSeq = e, 1
	return c.startAgent()
}

// startAgent starts the agent of the process now running (a new epoch).
func (c *cellsRun) startAgent() error {
	r := c.r
	a, err := cells.NewAgent(cells.AgentConfig{
		Engine: cellsEngine{c}, Ledger: c.led, SKU: c.sku, Cell: simCell,
		Chunk: c.chunk, LowWater: uint32(r.seed % 3), // 0: the default, half a chunk
		Clock: r.t, Logger: quiet,
	})
	if err != nil {
		return err
	}
	c.countAgent()
	c.agent, c.sh, c.due, c.ended = a, r.sh, r.now, nil
	return nil
}

// countAgent adds the work of the agent that ends to the run's counts.
func (c *cellsRun) countAgent() {
	if c.agent == nil {
		return
	}
	s := c.agent.Stats()
	c.r.faults["agent_top_ups"] += int(s.TopUps)
	c.r.faults["agent_top_up_retries"] += int(s.TopUpRetries)
	c.r.faults["agent_reconciled"] += int(s.Reconciled)
	c.r.faults["agent_credits"] += int(s.Credits)
}

// step runs one step and the checks of the SKU and the ledger.
func (c *cellsRun) step(s step) error {
	r := c.r
	switch s.kind {
	case stepAgent, stepLedgerFault, stepFence, stepOtherCell, stepReturnRequest:
		r.now += s.dt
		r.rng = rand.New(rand.NewPCG(r.seed, s.x))
		if err := c.act(s.kind); err != nil {
			return err
		}
		if r.sh.Failed() == nil {
			if err := checkMachine(r.model, r.sh.Core().Machine()); err != nil {
				return err
			}
		}
	default:
		if err := r.step(s); err != nil {
			return err
		}
	}
	if r.failure != nil {
		return r.failure
	}
	if r.sh != c.sh { // a crash or a restart: the agent died with its process
		if err := c.startAgent(); err != nil {
			return err
		}
	}
	return c.check()
}

func (c *cellsRun) act(kind stepKind) error {
	r, g := c.r, c.r.rng
	ctx := context.Background()
	switch kind {
	case stepAgent:
		if c.ended != nil { // fenced: the process sells what its log holds until an operator restarts it
			if g.IntN(3) == 0 {
				r.faults["cell_restarted_after_fencing"]++
				return r.crash()
			}
			return nil
		}
		for range 1 + g.IntN(3) {
			if err := c.turn(); err != nil || c.ended != nil {
				return err
			}
		}
	case stepLedgerFault:
		switch g.IntN(3) {
		case 0:
			c.led.fail += 1 + g.IntN(3)
			r.faults["ledger_calls_failing"]++
		case 1:
			c.led.lose += 1 + g.IntN(2)
			r.faults["ledger_answers_to_lose"]++
		default:
			c.led.downUntil = r.now + 1000 + int64(g.IntN(10_000))
			r.faults["ledger_down"]++
		}
	case stepFence:
		e, err := c.mem.BumpEpoch(ctx, simCell)
		if err != nil {
			return err
		}
		as, err := c.mem.Allocations(ctx, c.sku, simCell)
		if err != nil {
			return err
		}
		c.fence, c.fenced = e, map[uint64]bool{}
		for _, a := range as {
			c.fenced[a.Seq] = true
		}
		r.faults["epoch_taken_by_another_process"]++
	case stepOtherCell:
		return c.otherCellActs()
	case stepReturnRequest:
		if c.returnID == 0 || g.IntN(4) != 0 { // else the same request again: answered once
			c.returnID++
		}
		r.faults["return_requested"]++
		return c.mem.RequestReturn(ctx, c.sku, simCell, ledger.ReturnRequest{ID: c.returnID, Units: uint32(1 + g.IntN(4))})
	}
	return nil
}

// turn runs the agent's next turn, the clock moved to when it is due.
func (c *cellsRun) turn() error {
	r := c.r
	if r.now < c.due {
		r.now = c.due
	}
	wait, err := c.agent.Step()
	if r.failure != nil {
		return r.failure
	}
	r.faults["agent_turn"]++
	switch {
	case errors.Is(err, ledger.ErrFenced):
		c.ended = err
		r.faults["agent_fenced"]++
	case err != nil:
		return fmt.Errorf("the agent ended: %w", err) // nothing else ends it here (no write-off)
	}
	c.due = r.now + wait.Milliseconds()
	return nil
}

// otherCellActs is the other cell's top-up or return, on the ledger.
func (c *cellsRun) otherCellActs() error {
	g, ctx := c.r.rng, context.Background()
	if g.IntN(2) == 0 {
		c.otherSeq++
		_, err := c.mem.Allocate(ctx, c.sku, otherCell, c.otherSeq, c.otherEpoch, uint32(1+g.IntN(5)))
		if errors.Is(err, ledger.ErrExhausted) {
			c.otherSeq--
			return nil
		}
		c.r.faults["other_cell_top_up"]++
		return err
	}
	st, err := c.mem.Read(ctx, c.sku)
	if err != nil {
		return err
	}
	held := ledger.HeldTokens(st.Allocs[otherCell], st.Returns[otherCell])
	var rs []sku.TokenRange
	for _, t := range held {
		if g.IntN(2) == 0 && len(rs) < 4 {
			rs = append(rs, sku.TokenRange{First: t, Last: t})
		}
	}
	if len(rs) == 0 {
		return nil
	}
	c.otherReturns++
	c.r.faults["other_cell_return"]++
	return c.mem.Credit(ctx, c.sku, otherCell, c.otherEpoch,
		ledger.Allocation{Cell: otherCell, Seq: c.otherReturns, Epoch: c.otherEpoch, Ranges: sku.NormalizeRanges(rs)})
}

// asLedger returns sku allocations as the ledger's, of the simulated cell.
func asLedger(as []sku.Allocation) []ledger.Allocation {
	out := make([]ledger.Allocation, len(as))
	for i, a := range as {
		out[i] = ledger.Allocation{Cell: simCell, Seq: a.Seq, Epoch: a.Epoch, Ranges: a.Ranges}
	}
	return out
}

// check is the checks of the ledger and of the cell's log against it.
func (c *cellsRun) check() error {
	st, err := c.mem.Read(context.Background(), c.sku)
	if err != nil {
		return err
	}
	if bad := st.Check(); len(bad) > 0 {
		return fmt.Errorf("ledger: %v", bad)
	}
	allocs := st.Allocs[simCell]
	for i, a := range allocs {
		if a.Seq != uint64(i+1) {
			return fmt.Errorf("ledger: the cell's allocations are not seqs 1..n: seq %d at place %d (a seq skipped or made twice)", a.Seq, i+1)
		}
		if c.fence != 0 && !c.fenced[a.Seq] && a.Epoch < c.fence {
			return fmt.Errorf("ledger: allocation %d made at epoch %d after another process took epoch %d", a.Seq, a.Epoch, c.fence)
		}
	}
	if c.r.sh.Failed() != nil {
		return nil // the Machine may hold decisions the log lost: checked after the recovery
	}
	m := c.r.sh.Core().Machine()
	if _, ok := st.Logs[simCell]; len(m.Grants()) > 0 && !ok {
		return fmt.Errorf("the cell's log holds a GRANT, and the ledger has no mark of it (were the log lost, its allocations would be granted again)")
	}
	for _, g := range asLedger(m.Grants()) {
		if i := slices.IndexFunc(allocs, func(a ledger.Allocation) bool { return a.Seq == g.Seq }); i < 0 || fmt.Sprint(allocs[i]) != fmt.Sprint(g) {
			return fmt.Errorf("the log's GRANT %v is not the ledger's allocation", g)
		}
	}
	logReturns := asLedger(m.Returns())
	for _, ret := range st.Returns[simCell] {
		if i := slices.IndexFunc(logReturns, func(a ledger.Allocation) bool { return a.Seq == ret.Seq }); i < 0 || fmt.Sprint(logReturns[i].Ranges) != fmt.Sprint(ret.Ranges) {
			return fmt.Errorf("the ledger credited return %v, which the log does not hold", ret)
		}
	}
	ledgerHeld := ledger.HeldTokens(allocs, st.Returns[simCell])
	for _, t := range ledger.HeldTokens(asLedger(m.Grants()), logReturns) {
		if _, ok := slices.BinarySearch(ledgerHeld, t); !ok {
			return fmt.Errorf("the cell's log holds token %d, which is not the cell's per the ledger (sold beyond its grants)", t)
		}
	}
	return nil
}

// maxSettleTurns bounds the agent's turns at the end of a history.
const maxSettleTurns = 64

// final heals the ledger, runs the agent until the ledger and the log
// agree (a restart for a failed SKU or a fenced agent), and checks that
// they do; then the SKU mode's final checks.
func (c *cellsRun) final() error {
	r := c.r
	c.led.fail, c.led.lose, c.led.downUntil = 0, 0, 0
	settled := false
	for range maxSettleTurns {
		switch {
		case r.sh.Failed() != nil || c.ended != nil:
			if err := r.crash(); err != nil {
				return err
			}
		default:
			if err := c.turn(); err != nil {
				return err
			}
			if err := r.flush(); err != nil {
				return err
			}
		}
		if r.failure != nil {
			return r.failure
		}
		if r.sh != c.sh {
			if err := c.startAgent(); err != nil {
				return err
			}
		}
		if err := c.check(); err != nil {
			return err
		}
		if settled = c.settled(); settled {
			break
		}
	}
	if !settled {
		return c.unsettled()
	}
	c.countAgent()
	c.agent = nil
	return r.final()
}

// settled reports whether the agent is in its loop with nothing in
// flight and the ledger and the log agree on the cell's allocations and
// returns.
func (c *cellsRun) settled() bool {
	return c.r.sh.Failed() == nil && !c.agent.TopUpPending() && c.unsettled() == nil
}

// unsettled says how the ledger and the log disagree (nil: they agree).
func (c *cellsRun) unsettled() error {
	ctx := context.Background()
	allocs, err := c.mem.Allocations(ctx, c.sku, simCell)
	if err != nil {
		return err
	}
	returns, err := c.mem.Returns(ctx, c.sku, simCell)
	if err != nil {
		return err
	}
	if c.r.sh.Failed() != nil {
		return fmt.Errorf("the SKU is failed at the end")
	}
	m := c.r.sh.Core().Machine()
	if grants := asLedger(m.Grants()); len(grants) != len(allocs) {
		return fmt.Errorf("the agent did not settle: the ledger holds %d allocations of the cell, its log %d GRANTs (an allocation never logged)", len(allocs), len(grants))
	}
	if logged := asLedger(m.Returns()); len(logged) != len(returns) {
		return fmt.Errorf("the agent did not settle: the ledger credited %d returns of the cell, its log holds %d RETURNs", len(returns), len(logged))
	}
	return nil
}

// cellsEngine is the agent's engine (cells.Engine): each call is decided
// by the shell and checked against the model (run.decide), its round
// appended and flushed, and answered once durable, as the actor answers.
type cellsEngine struct{ c *cellsRun }

// errNotDurable: the call's record is not durable after the flush (a slow
// or failed one); the agent asks again, as after a timeout.
var errNotDurable = errors.New("sim: the record is not durable yet")

func (e cellsEngine) Grant(_ context.Context, _, _ string, a sku.Allocation) error {
	call, predict := e.c.r.grantCall(a)
	return e.settle(call, predict)
}

func (e cellsEngine) Return(_ context.Context, _, _ string, seq, epoch uint64, units uint32) (sku.Allocation, error) {
	call, predict := e.c.r.returnCall(seq, epoch, units)
	if err := e.settle(call, predict); err != nil {
		return sku.Allocation{}, err
	}
	return call.Cell.Alloc, nil
}

func (e cellsEngine) SetEpoch(_ context.Context, _, _ string, epoch uint64) error {
	call, predict := e.c.r.epochCall(epoch)
	return e.settle(call, predict)
}

// Cell is the report of the live state, answered as the actor answers a
// read: once the records it rests on are durable.
func (e cellsEngine) Cell(context.Context, string, string) (core.CellReport, error) {
	call := &core.Call{Kind: core.KindCell, Report: new(core.Report)}
	if err := e.settle(call, func() modelReply { return modelReply{} }); err != nil {
		return core.CellReport{}, err
	}
	return call.Report.Cell, nil
}

// settle decides call, appends and flushes its round, and answers as the
// actor would: its error, or errNotDurable while the record waits.
func (e cellsEngine) settle(call *core.Call, predict func() modelReply) error {
	r := e.c.r
	for _, f := range []func() error{func() error { return r.decide(call, predict) }, r.advance, r.flush} {
		if err := f(); err != nil {
			r.fail(err)
			return err
		}
	}
	if _, waiting := r.restsOn[call]; waiting {
		return errNotDurable
	}
	return call.Err
}
