package httpapi_test

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
)

// faultEngine is the real engine (*actors.Engine, over a temp data dir)
// behind hooks that fail, hold or order the commands a test names, and
// with the load figures a test sets published in place of the SKU's own.
// It decides nothing: every command goes to the engine, or is answered
// with a hook's error before it is sent (then nothing was applied) or
// after its answer came (then it stands).
//
// Its zero value has no hooks and publishes the engine's own load.
type faultEngine struct {
	*actors.Engine // set by startServer (serverOptions.faults)
	hooks          atomic.Pointer[hooks]

	mu    sync.Mutex
	loads map[[2]string]skuLoad
}

// callKind names the commands a hook sees: those a test fails or holds.
// The engine's other commands pass by without hooks.
type callKind uint8

const (
	kindReserve callKind = iota + 1 // Reserve and ReserveWith
	kindGet
	kindLookup
	kindRefunds
	kindAudit
	kindSnapshot
	kindDefine
	kindFeedLookup  // the feed's look-up of a page's reservations (feed.Source.Reservations)
	kindExportState // the export's rebuilt state (feed.Source.DurableState)
)

// engineCall is one command as a hook sees it; fields that do not apply
// to its kind are empty.
type engineCall struct {
	kind              callKind
	campaignID, skuID string
	requestID, userID string // reserve, lookup
	reservationID     string // get
}

// hooks run on the caller's goroutine, so they may block.
type hooks struct {
	// before runs before the command is sent to the engine; a non-nil
	// error is answered instead, and nothing is applied.
	before func(ctx context.Context, c engineCall) error
	// decided runs once the engine answered a reserve (its result), before
	// the answer is returned: blocking here holds back an answer whose
	// state is durable. A non-nil error is answered instead, the command
	// standing.
	decided func(ctx context.Context, c engineCall, res sku.Result) error
}

// skuLoad is what a SKU publishes about its queue, rate and group commits
// (actors.Stats): set by a test, it replaces the engine's own figures.
type skuLoad struct {
	queued                    int64
	oldestWait                time.Duration
	ratePerSecond             float64
	commitWait, commitLatency time.Duration
	commits                   uint64
}

// setHooks replaces the hooks; the zero hooks remove them.
func (f *faultEngine) setHooks(h hooks) { f.hooks.Store(&h) }

// setLoad publishes l as the SKU's load from now on (the SKU may be
// defined later): the zero skuLoad pins admission's view to an idle SKU on
// a fast disk, so that a test of the permit bound does not depend on how
// fast the machine's disk is at the time.
func (f *faultEngine) setLoad(campaignID, skuID string, l skuLoad) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.loads == nil {
		f.loads = make(map[[2]string]skuLoad)
	}
	f.loads[[2]string{campaignID, skuID}] = l
}

// withLoad returns st with the load set for its SKU, if any.
func (f *faultEngine) withLoad(st actors.Stats) actors.Stats {
	f.mu.Lock()
	l, ok := f.loads[[2]string{st.CampaignID, st.SKUID}]
	f.mu.Unlock()
	if ok {
		st.Queued, st.OldestWait, st.RatePerSecond = l.queued, l.oldestWait, l.ratePerSecond
		st.CommitWait, st.CommitLatency, st.Commits = l.commitWait, l.commitLatency, l.commits
	}
	return st
}

// before runs the before hook, then answers ctx's error if it is done.
func (f *faultEngine) before(ctx context.Context, c engineCall) error {
	if h := f.hooks.Load(); h != nil && h.before != nil {
		if err := h.before(ctx, c); err != nil {
			return err
		}
	}
	return ctx.Err()
}

func (f *faultEngine) ReserveWith(ctx context.Context, campaignID, skuID, requestID, userID string, holder sku.Holder) (sku.Result, error) {
	return f.reserve(ctx, engineCall{kind: kindReserve, campaignID: campaignID, skuID: skuID, requestID: requestID, userID: userID},
		func() (sku.Result, error) {
			return f.Engine.ReserveWith(ctx, campaignID, skuID, requestID, userID, holder)
		})
}

// reserve sends a reserve between the hooks.
func (f *faultEngine) reserve(ctx context.Context, c engineCall, send func() (sku.Result, error)) (sku.Result, error) {
	if err := f.before(ctx, c); err != nil {
		return sku.Result{}, err
	}
	res, err := send()
	if h := f.hooks.Load(); err == nil && h != nil && h.decided != nil {
		err = h.decided(ctx, c, res)
	}
	return res, err
}

func (f *faultEngine) Lookup(ctx context.Context, campaignID, skuID, requestID string) (sku.Result, error) {
	c := engineCall{kind: kindLookup, campaignID: campaignID, skuID: skuID, requestID: requestID}
	if err := f.before(ctx, c); err != nil {
		return sku.Result{}, err
	}
	return f.Engine.Lookup(ctx, campaignID, skuID, requestID)
}

func (f *faultEngine) Get(ctx context.Context, reservationID string) (sku.View, error) {
	if err := f.before(ctx, engineCall{kind: kindGet, reservationID: reservationID}); err != nil {
		return sku.View{}, err
	}
	return f.Engine.Get(ctx, reservationID)
}

func (f *faultEngine) Refunds(ctx context.Context, campaignID, skuID string) ([]sku.Refund, error) {
	if err := f.before(ctx, engineCall{kind: kindRefunds, campaignID: campaignID, skuID: skuID}); err != nil {
		return nil, err
	}
	return f.Engine.Refunds(ctx, campaignID, skuID)
}

// Reservations and DurableState are what the event feed reads of the
// engine (feed.Source): a server on a faultEngine serves its feed over it
// (startServer), so that a test fails the feed's engine reads as it fails
// the other routes'.
func (f *faultEngine) Reservations(ctx context.Context, campaignID, skuID string, seqs []uint32) ([]sku.View, error) {
	if err := f.before(ctx, engineCall{kind: kindFeedLookup, campaignID: campaignID, skuID: skuID}); err != nil {
		return nil, err
	}
	return f.Engine.Reservations(ctx, campaignID, skuID, seqs)
}

func (f *faultEngine) DurableState(campaignID, skuID string) (*sku.Machine, uint64, error) {
	if err := f.before(context.Background(), engineCall{kind: kindExportState, campaignID: campaignID, skuID: skuID}); err != nil {
		return nil, 0, err
	}
	return f.Engine.DurableState(campaignID, skuID)
}

func (f *faultEngine) Audit(ctx context.Context, campaignID, skuID string) (sku.Audit, error) {
	if err := f.before(ctx, engineCall{kind: kindAudit, campaignID: campaignID, skuID: skuID}); err != nil {
		return sku.Audit{}, err
	}
	return f.Engine.Audit(ctx, campaignID, skuID)
}

func (f *faultEngine) Snapshot(ctx context.Context, campaignID, skuID string) (actors.SnapshotInfo, error) {
	if err := f.before(ctx, engineCall{kind: kindSnapshot, campaignID: campaignID, skuID: skuID}); err != nil {
		return actors.SnapshotInfo{}, err
	}
	return f.Engine.Snapshot(ctx, campaignID, skuID)
}

// DefineAll runs the hook of each definition in order: the list up to
// the first the hook fails is defined, and that one gets the hook's
// error, as the engine answers a list stopped at a definition.
func (f *faultEngine) DefineAll(ctx context.Context, defs []sku.Definition, each time.Duration) []error {
	for i, d := range defs {
		if err := f.before(ctx, engineCall{kind: kindDefine, campaignID: d.CampaignID, skuID: d.SKUID}); err != nil {
			errs := append(f.Engine.DefineAll(ctx, defs[:i], each), err)
			for range defs[i+1:] {
				errs = append(errs, actors.ErrNotBegun)
			}
			return errs
		}
	}
	return f.Engine.DefineAll(ctx, defs, each)
}

func (f *faultEngine) SKUStats(campaignID, skuID string) (actors.Stats, bool) {
	st, ok := f.Engine.SKUStats(campaignID, skuID)
	return f.withLoad(st), ok
}

func (f *faultEngine) AllStats() []actors.Stats {
	all := f.Engine.AllStats()
	for i := range all {
		all[i] = f.withLoad(all[i])
	}
	return all
}
