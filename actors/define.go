package actors

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/skudir"
	"github.com/seckill/seckill/wal"
	"golang.org/x/sync/errgroup"
)

// Definitions. Each SKU's definition is a record of its own log: one
// commit (an fsync, and a replicated log's standby acknowledgement). A
// definition of many SKUs (a campaign PUT, a campaign file, a pending list
// being finished) is one DefineAll, whose commits run side by side,
// skudir.AtOnce at a time: one after another they cost a commit's round
// trip each, minutes for hundreds of SKUs on a busy disk or a strict
// replica set.

// ErrNotBegun: DefineAll did not begin this definition, because one before
// it in the list failed; nothing of it was done.
var ErrNotBegun = errors.New("definition not begun: one before it in the list failed")

// Define creates a SKU, or applies an allowed redefinition (end_at later,
// sale_limit higher): DefineAll of one definition. A change that is not
// allowed returns an error wrapping sku.ErrInvalidDefinition; a new SKU
// beyond Config.MaxSKUs one wrapping ErrTooManySKUs, before its folder is
// made (unless MakeRoom holds a place for it). The definition is durable
// when Define returns nil.
func (e *Engine) Define(ctx context.Context, d sku.Definition) error {
	return e.DefineAll(ctx, []sku.Definition{d}, 0)[0]
}

// DefineAll defines defs as Define would one after another, stopping at
// the first error, except that the definitions run side by side,
// skudir.AtOnce at a time. It returns one error per definition, in the
// list's order: nil once it is durable, ErrNotBegun for one not begun.
//
// It holds the locks of the list's campaigns for the whole list: two
// lists of a campaign never interleave (those of other campaigns run
// beside it), so the checks it runs first, once, over the list in order,
// hold until it is defined: each definition valid, naming a SKU once, with the
// purchase_limit of its campaign's defined SKUs and of the list's
// definitions before it (sku.CheckCampaignPurchaseLimit: two lists of one
// campaign cannot leave it with two), and a redefinition allowed
// (sku.Definition.CheckRedefine). The first definition to fail them gets
// its error and only those before it are defined. One whose commit fails
// (its log, its actor's refusal, ctx) stops the list the same way: those
// begun finish, those not begun yet get ErrNotBegun. So the first error in
// the list's order is never ErrNotBegun, and every definition before it is
// durable. each > 0 bounds the wait for each definition's answer (then
// its error is ctx's: the actor still decides it).
func (e *Engine) DefineAll(ctx context.Context, defs []sku.Definition, each time.Duration) []error {
	errs := make([]error, len(defs))
	defer e.defining.lock(campaignsOf(defs))()
	n, err := e.checkList(defs)
	if n < len(defs) {
		errs[n] = err
		for i := n + 1; i < len(defs); i++ {
			errs[i] = ErrNotBegun
		}
	}
	// failedAt is the least index whose definition failed (n: none). Go
	// waits for a free slot, so the goroutines start in the list's order,
	// but they run in any: one may fail before another started ahead of it
	// has begun, which must still define (only those after a failure are
	// not begun).
	var failedAt atomic.Int64
	failedAt.Store(int64(n))
	g := e.definitionGroup(skudir.AtOnce)
	for i := range defs[:n] {
		g.Go(func() error {
			if failedAt.Load() < int64(i) {
				errs[i] = ErrNotBegun
				return nil
			}
			dctx, cancel := ctx, context.CancelFunc(func() {})
			if each > 0 {
				dctx, cancel = context.WithTimeout(ctx, each)
			}
			h, err := e.define(dctx, defs[i])
			cancel()
			if err != nil {
				failedBefore(&failedAt, i) // before the discard: none after it begins meanwhile
			}
			if h != nil {
				e.discard(h)
			}
			errs[i] = err
			return nil
		})
	}
	_ = g.Wait() // each error is in errs
	return errs
}

// definitionGroup runs the definitions of a list side by side, at most
// limit at a time, each function's goroutine started in the order of its
// Go, and waits for them: an errgroup.Group (newDefinitionGroup). A test's
// twin starts them so, but runs them in an order it chooses.
type definitionGroup interface {
	Go(f func() error)
	Wait() error
}

// newDefinitionGroup is the Engine's definitionGroup: an errgroup.Group
// with limit.
func newDefinitionGroup(limit int) definitionGroup {
	g := &errgroup.Group{}
	g.SetLimit(limit)
	return g
}

// failedBefore lowers at to i when i is less.
func failedBefore(at *atomic.Int64, i int) {
	for cur := at.Load(); int64(i) < cur && !at.CompareAndSwap(cur, int64(i)); cur = at.Load() {
	}
}

// checkList runs DefineAll's checks over defs in order and returns how
// many pass, from the first, and the error of the next one.
func (e *Engine) checkList(defs []sku.Definition) (int, error) {
	listed := campaignsOf(defs)
	// scope holds, per campaign, a definition with its purchase_limit:
	// a defined SKU's, else the list's first. The defined SKUs of a
	// campaign agree on it (this check, each list at a time).
	scope := make(map[string]*sku.Definition, len(listed))
	for _, h := range e.SKUs() {
		v := h.durable.Load()
		if _, in := slices.BinarySearch(listed, h.campaignID); in && v != nil && v.Definition.CampaignID != "" && scope[h.campaignID] == nil {
			scope[h.campaignID] = v.Definition
		}
	}
	named := make(map[skuKey]struct{}, len(defs))
	for i := range defs {
		d := &defs[i]
		if err := d.Validate(); err != nil {
			return i, err
		}
		k := skuKey{d.CampaignID, d.SKUID}
		if _, ok := named[k]; ok {
			return i, fmt.Errorf("%w: %s/%s is named twice in one list of definitions", sku.ErrInvalidDefinition, d.CampaignID, d.SKUID)
		}
		named[k] = struct{}{}
		if s, ok := scope[d.CampaignID]; ok {
			if err := sku.CheckCampaignPurchaseLimit(s, d); err != nil {
				return i, err
			}
		} else {
			scope[d.CampaignID] = d
		}
		if h := e.SKU(d.CampaignID, d.SKUID); h != nil {
			if v := h.durable.Load(); v != nil && v.Definition.CampaignID != "" && !d.Repeats(*v.Definition) {
				if err := v.Definition.CheckRedefine(*d); err != nil {
					return i, err
				}
			}
		}
	}
	return len(defs), nil
}

// define defines one SKU of a list DefineAll checked. A SKU it created
// whose first definition failed is returned for the caller to discard.
func (e *Engine) define(ctx context.Context, d sku.Definition) (discard *SKU, err error) {
	h, err := e.handleFor(d.CampaignID, d.SKUID)
	if err != nil {
		return h, err // h: its new folder or log failed
	}
	c := newCall(core.KindDefine)
	c.Def = &d
	if err := h.do(ctx, c); err != nil {
		return nil, err // not answered in time: the actor still decides it
	}
	err = c.Err
	c.free()
	if err != nil && h.Stats().Definition.CampaignID == "" {
		return h, err
	}
	return nil, err
}

// discard drops a SKU whose first definition failed (refused, or its log
// failed: on a full disk, a write or fsync): its actor, its handle and its
// folder, so nothing of a definition that did not become durable is seen
// (a SKU whose log failed would otherwise list as defined, with empty
// figures) and its retry creates it anew. Bytes of the definition a failed
// fsync left in the folder go with it. A folder that cannot be removed is
// kept as a leftover (a later Define appends to it, as after Open).
func (e *Engine) discard(h *SKU) {
	_ = e.system.Root.StopFuture(h.pid).Wait() // the actor closes its log first
	k := skuKey{h.campaignID, h.skuID}
	e.create.Lock()
	e.skusMu.Lock()
	e.forgetLocked(k)
	e.skusMu.Unlock()
	if err := os.RemoveAll(h.dir.String()); err != nil {
		e.leftover[k] = struct{}{}
	} else {
		_ = wal.SyncDir(skudir.Campaign(e.cfg.DataDir, h.campaignID))
	}
	e.create.Unlock()
	e.tickMu.Lock()
	delete(e.ticked, h)
	delete(e.rates, h)
	e.tickMu.Unlock()
}

// handleFor returns the SKU, creating its folder and actor if needed. A
// SKU it created and could not make durable (its folder's fsync, its new
// log) is returned with the error, for the caller to discard. Only the
// count and the spawn are under e.create: the folder's fsyncs and the new
// log's opening, the bulk of a creation, run side by side for the SKUs of
// a list.
func (e *Engine) handleFor(campaignID, skuID string) (*SKU, error) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, ErrClosed
	}
	e.mu.Unlock()
	if h := e.handle(campaignID, skuID); h != nil {
		return h, nil
	}
	h, created, err := e.spawnNew(skuKey{campaignID, skuID})
	if !created {
		return h, err
	}
	// Durable before its definition is, which waits for this return.
	if err := wal.SyncDir(skudir.Campaign(e.cfg.DataDir, campaignID)); err != nil {
		return h, err
	}
	if err := wal.SyncDir(e.cfg.DataDir); err != nil {
		return h, err
	}
	<-h.ready
	return h, h.readyErr
}

// spawnNew makes the folder of k and starts its actor (created), if there
// is room for it; a handle created while the caller waited for e.create
// is returned as it is.
func (e *Engine) spawnNew(k skuKey) (h *SKU, created bool, err error) {
	e.create.Lock()
	defer e.create.Unlock()
	if h := e.handle(k.campaignID, k.skuID); h != nil {
		return h, false, nil
	}
	if e.isClosed() { // Close takes e.create after closing: no SKU is born after its sweep
		return nil, false, ErrClosed
	}
	if err := e.roomForLocked(k); err != nil {
		return nil, false, err
	}
	if err := os.MkdirAll(skudir.Of(e.cfg.DataDir, k.campaignID, k.skuID).String(), 0o750); err != nil {
		return nil, false, err
	}
	delete(e.held, k)
	delete(e.leftover, k)
	return e.spawn(k), true, nil
}
