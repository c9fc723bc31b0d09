package actors

import (
	"fmt"

	"github.com/seckill/seckill/actors/sku"
)

// The room for SKUs: an engine holds at most Config.MaxSKUs SKU folders,
// counted as len(skus) + len(held) + len(leftover), all under e.create.

// MaxSKUs returns the most SKUs the engine holds (Config.MaxSKUs).
func (e *Engine) MaxSKUs() int { return e.cfg.MaxSKUs }

// SKUCount returns the SKU folders the engine counts against MaxSKUs:
// its SKUs (defined or being defined), the places MakeRoom holds, and the
// folders left undefined by a crash.
func (e *Engine) SKUCount() int {
	e.create.Lock()
	defer e.create.Unlock()
	return e.countLocked()
}

func (e *Engine) countLocked() int {
	e.skusMu.RLock()
	n := len(e.skus)
	e.skusMu.RUnlock()
	return n + len(e.held) + len(e.leftover)
}

// roomForLocked returns nil if the SKU k may be created: a place is held
// for it, its folder is left over, or the count is below MaxSKUs.
func (e *Engine) roomForLocked(k skuKey) error {
	if _, ok := e.held[k]; ok {
		return nil
	}
	if _, ok := e.leftover[k]; ok {
		return nil
	}
	if n := e.countLocked(); n >= e.cfg.MaxSKUs {
		return fmt.Errorf("%w: %s/%s would be SKU %d of at most %d", ErrTooManySKUs, k.campaignID, k.skuID, n+1, e.cfg.MaxSKUs)
	}
	return nil
}

// MakeRoom checks, before any of them is defined, that the SKUs of defs
// that the engine does not hold yet fit under MaxSKUs, and holds their
// places until release is called: a Define of one of them then needs no
// more room, and no other Define or MakeRoom can take its place. It
// returns an error wrapping ErrTooManySKUs, holding nothing, when they do
// not fit. Call release once the definitions are done (or failed): the
// places of SKUs not created by then are freed. A SKU whose place another
// MakeRoom holds is not counted twice; if that one releases it uncreated,
// its Define needs room again.
//
// Defs of more than one SKU are also made durable as pending until
// release (pending.go: Config.Pending): a crash before release leaves
// them to FinishPending, which the next start runs, so the definition is
// whole after it. release(true) says an error cut the definition short
// after it began (a Define failed after another was applied, or with its
// result unknown): the list is kept as a crash would leave it, for the
// next start to finish. release(false) says the definitions are all done,
// or none was applied: the list is removed, and with it the lists kept for
// the same campaigns (their definition is superseded by this one). An
// error making them durable holds nothing. While FinishPending finishes a
// list, MakeRoom waits for it (Engine.stating).
func (e *Engine) MakeRoom(defs []sku.Definition) (release func(cut bool), err error) {
	e.stating.RLock()
	free, err := e.holdRoom(defs)
	if err != nil {
		e.stating.RUnlock()
		return nil, err
	}
	key := ""
	if len(defs) > 1 {
		if key, err = e.cfg.Pending.Put(defs); err != nil {
			free()
			e.stating.RUnlock()
			return nil, err
		}
	}
	return func(cut bool) {
		defer e.stating.RUnlock()
		defer free()
		if cut && key != "" {
			e.keepCut(key, defs)
			return
		}
		if key != "" {
			e.removePending(key)
		}
		if !cut {
			e.dropSuperseded(defs)
		}
	}, nil
}

// holdRoom is MakeRoom's count and hold of the places.
func (e *Engine) holdRoom(defs []sku.Definition) (release func(), err error) {
	e.create.Lock()
	defer e.create.Unlock()
	var added []skuKey
	for _, d := range defs {
		k := skuKey{d.CampaignID, d.SKUID}
		if e.handle(k.campaignID, k.skuID) != nil {
			continue
		}
		if _, ok := e.held[k]; ok {
			continue
		}
		if _, ok := e.leftover[k]; ok {
			continue
		}
		added = append(added, k)
		e.held[k] = struct{}{}
	}
	if n := e.countLocked(); n > e.cfg.MaxSKUs {
		for _, k := range added {
			delete(e.held, k)
		}
		return nil, fmt.Errorf("%w: %d new SKU%s, room for %d more (%d of at most %d held)",
			ErrTooManySKUs, len(added), plural(len(added)), max(0, e.cfg.MaxSKUs-(n-len(added))), n-len(added), e.cfg.MaxSKUs)
	}
	return func() {
		e.create.Lock()
		defer e.create.Unlock()
		for _, k := range added {
			delete(e.held, k)
		}
	}, nil
}

// plural is "s" unless n is 1.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
