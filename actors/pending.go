package actors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/seckill/seckill/actors/sku"
)

// Pending definitions. A definition of many SKUs (a campaign PUT, a
// campaign file) is one DefineAll, each SKU durable in its own log: a
// crash while it runs would leave the campaign partly defined. MakeRoom,
// which such a definition calls before its DefineAll, first makes the
// whole list durable in the engine's PendingStore (Config.Pending: the
// data dir's pending-define-* files, pendingdir.go, or a replica set's
// list in etcd), and its release removes it. A list found at start is a
// definition a crash cut short: FinishPending defines the rest, so that
// after a crash a multi-SKU definition is either not begun or whole;
// until it has, its campaigns are PartlyDefined. An error part-way (a full
// disk after some SKUs were defined) keeps the list the same way
// (MakeRoom's release), so that the next start makes that definition
// whole too, unless a later definition of the campaign, which the
// operator sends instead or to finish it, supersedes it.

// PendingStore keeps the definitions of many SKUs durable while they are
// defined. Its methods are called from the callers of MakeRoom and its
// release, and from FinishPending; they may block on I/O.
type PendingStore interface {
	// Put makes defs durable before their first Define and returns the
	// key that names them. An error holds nothing: no list may finish a
	// definition whose caller was told it failed.
	Put(defs []sku.Definition) (key string, err error)
	// Remove drops the list key: its definition is done, or superseded.
	Remove(key string) error
	// List returns the lists kept, oldest first; one that cannot be read
	// back carries its error (Err) and no definitions.
	List(ctx context.Context) ([]PendingList, error)
	// Finisher says who finishes a list kept here whose definition an
	// error cut short: where the list lives decides who reads it next.
	Finisher() Finisher
}

// Finisher is who finishes a definition of many SKUs left unfinished,
// for the operator told that it was cut short (httpapi's 504).
type Finisher uint8

const (
	// FinishedAtStart: the list is in this node's data dir, and its next
	// start finishes it (a single node).
	FinishedAtStart Finisher = iota
	// FinishedByNextPrimary: the list is the replica set's, and the
	// set's next primary finishes it as it takes the lead; this node's
	// next start does not, unless it leads then.
	FinishedByNextPrimary
)

// PendingFinisher is who finishes the definitions this engine keeps
// pending (Config.Pending's Finisher).
func (e *Engine) PendingFinisher() Finisher {
	return e.cfg.Pending.Finisher()
}

// PendingList is one definition of many SKUs kept by a PendingStore.
type PendingList struct {
	Key  string
	Defs []sku.Definition
	// Err says why the list could not be read back (damaged).
	Err error
}

// keepCut keeps the list key of defs, a definition an error cut short
// or one found at start: the next start's FinishPending finishes it,
// unless a later definition of its campaigns supersedes it first
// (dropSuperseded). Until then its campaigns are PartlyDefined.
func (e *Engine) keepCut(key string, defs []sku.Definition) {
	e.cutMu.Lock()
	defer e.cutMu.Unlock()
	if e.cut == nil {
		e.cut = make(map[string][]string)
	}
	e.cut[key] = campaignsOf(defs)
}

// stillCut reports whether the list key is kept and not superseded.
func (e *Engine) stillCut(key string) bool {
	e.cutMu.Lock()
	defer e.cutMu.Unlock()
	_, ok := e.cut[key]
	return ok
}

// finishedCut forgets the list key and removes it from the store,
// unless a later definition superseded it (dropSuperseded removed it).
// The store is called outside cutMu: a replica set's is an etcd round
// trip, which no read of PartlyDefined should wait for.
func (e *Engine) finishedCut(key string) {
	e.cutMu.Lock()
	_, ok := e.cut[key]
	delete(e.cut, key)
	e.cutMu.Unlock()
	if ok {
		e.removePending(key)
	}
}

// removePending removes a list whose definitions are done.
func (e *Engine) removePending(key string) {
	if err := e.cfg.Pending.Remove(key); err != nil {
		e.cfg.Logger.Warn("a pending definitions list could not be removed; the next start defines its SKUs again (each as it is: nothing changes)", "list", key, "err", err)
	}
}

// PartlyDefined reports whether a definition naming campaignID began and
// is unfinished: cut short by an error and kept for the next start
// (keepCut), or found at start and not finished yet (LoadPending): the
// campaign holds only the SKUs defined so far, until a repeat of the
// definition or FinishPending finishes it.
func (e *Engine) PartlyDefined(campaignID string) bool {
	e.cutMu.Lock()
	defer e.cutMu.Unlock()
	for _, campaigns := range e.cut {
		if _, ok := slices.BinarySearch(campaigns, campaignID); ok {
			return true
		}
	}
	return false
}

// dropSuperseded removes the kept lists of definitions cut short whose
// campaigns are all among those defs defined: the operator has stated
// those campaigns since, and a SKU that statement left out must not come
// back at the next start.
func (e *Engine) dropSuperseded(defs []sku.Definition) {
	var dropped []string
	e.cutMu.Lock()
	if len(e.cut) > 0 {
		stated := campaignsOf(defs)
		for key, campaigns := range e.cut {
			if allIn(campaigns, stated) {
				dropped = append(dropped, key)
				delete(e.cut, key)
			}
		}
	}
	e.cutMu.Unlock()
	for _, key := range dropped { // outside cutMu, as in finishedCut
		e.removePending(key)
	}
}

// campaignsOf is the sorted, distinct campaigns of defs.
func campaignsOf(defs []sku.Definition) []string {
	var out []string
	for _, d := range defs {
		out = append(out, d.CampaignID)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// allIn reports whether every element of a is in the sorted b.
func allIn(a, b []string) bool {
	for _, x := range a {
		if _, ok := slices.BinarySearch(b, x); !ok {
			return false
		}
	}
	return true
}

// LoadPending reads the lists the store keeps, the definitions a crash
// cut short, and keeps them for FinishPending: from then on their
// campaigns are PartlyDefined until finished. A damaged list is logged and
// removed. FinishPending loads them itself when this was not called; a
// server that serves before FinishPending ends (a replica set's new
// primary, which finishes them while it serves) calls it first, so that
// no read shows such a campaign partial without the flag.
func (e *Engine) LoadPending(ctx context.Context) error {
	lists, err := e.cfg.Pending.List(ctx)
	if err != nil {
		return fmt.Errorf("reading the pending definitions: %w", err)
	}
	var loaded []PendingList
	for _, l := range lists {
		if l.Err != nil {
			e.cfg.Logger.Error("a pending definitions list is damaged; its SKUs are left as they are (repeat the campaign's PUT)", "list", l.Key, "err", l.Err)
			e.removePending(l.Key)
			continue
		}
		e.keepCut(l.Key, l.Defs)
		loaded = append(loaded, l)
	}
	e.cutMu.Lock()
	e.loaded, e.didLoad = loaded, true
	e.cutMu.Unlock()
	return nil
}

// FinishPending completes the multi-SKU definitions a crash cut short
// (the store's lists, oldest first; LoadPending): each SKU is defined as
// the cut definition stated it (one already defined so is left as it
// is), and the list removed. A list a later definition of its campaigns
// superseded meanwhile is left there. It returns the SKUs it defined anew
// or changed. A definition the engine refuses (sku.ErrInvalidDefinition:
// it no longer applies) is logged and dropped; any other error (an I/O
// error, too many SKUs, ctx) keeps the list for a later call and is
// returned. Call it after Open, before serving (or after LoadPending).
func (e *Engine) FinishPending(ctx context.Context) (finished []string, err error) {
	e.cutMu.Lock()
	didLoad := e.didLoad
	e.cutMu.Unlock()
	if !didLoad {
		if err := e.LoadPending(ctx); err != nil {
			return nil, err
		}
	}
	for {
		e.cutMu.Lock()
		if len(e.loaded) == 0 {
			e.cutMu.Unlock()
			return finished, nil
		}
		l := e.loaded[0]
		e.cutMu.Unlock()
		if err := e.finishList(ctx, l, &finished); err != nil {
			return finished, err
		}
		e.cutMu.Lock()
		e.loaded = e.loaded[1:]
		e.cutMu.Unlock()
	}
}

// finishList defines the rest of l, unless a definition stated since
// supersedes it, adding the SKUs it changed to finished. It holds
// e.stating alone: a definition stated meanwhile waits in MakeRoom, and
// then supersedes what it finished. A definition that no longer applies
// is dropped and the rest defined: each round defines the list up to such
// a one (DefineAll stops there), the next round what it left.
func (e *Engine) finishList(ctx context.Context, l PendingList, finished *[]string) error {
	e.stating.Lock()
	defer e.stating.Unlock()
	rest := l.Defs
	for len(rest) > 0 && e.stillCut(l.Key) { // else superseded: the operator stated its campaigns since
		had := make([]*sku.Definition, len(rest))
		for i, d := range rest {
			if h := e.SKU(d.CampaignID, d.SKUID); h != nil {
				def := *h.Stats().Definition
				had[i] = &def
			}
		}
		var next []sku.Definition
		var failed error
		for i, err := range e.DefineAll(ctx, rest, 0) {
			d := rest[i]
			switch {
			case err == nil:
				if had[i] == nil || !d.Repeats(*had[i]) {
					*finished = append(*finished, d.CampaignID+"/"+d.SKUID)
				}
			case errors.Is(err, ErrNotBegun):
				next = append(next, d)
			case errors.Is(err, sku.ErrInvalidDefinition):
				e.cfg.Logger.Error("a definition a crash cut short no longer applies; the SKU is left as it is", "campaign_id", d.CampaignID, "sku_id", d.SKUID, "err", err)
			case failed == nil:
				failed = fmt.Errorf("finishing the definitions of %s: %s/%s: %w", l.Key, d.CampaignID, d.SKUID, err)
			}
		}
		if failed != nil {
			return failed
		}
		rest = next
	}
	e.finishedCut(l.Key)
	return nil
}
