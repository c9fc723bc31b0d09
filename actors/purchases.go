package actors

import (
	"context"
	"errors"
	"hash/maphash"
	"sync"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/purchase"
	"github.com/seckill/seckill/actors/sku"
)

// The engine side of purchase_limit "campaign": one
// purchase.Registry per campaign of that scope, behind a mutex. A reserve
// of such a campaign's SKU claims the user first (reserveScoped); the
// registry learns the SKU's reservations and closes from the durable path
// (purchaseEvents, applied where the log's waiters are released, before
// the callers wake, in log order) and from the SKU's state after each recovery
// (resyncPurchases). The rule itself is package purchase's.

// purchases is one campaign's registry, in purchaseShards shards by user:
// claims of different users never meet, so each shard has its own mutex
// and the callers of a busy sale rarely wait for one another.
type purchases struct {
	shards [purchaseShards]purchaseShard
}

// purchaseShards is the number of shards of a campaign's registry.
const purchaseShards = 64

type purchaseShard struct {
	mu  sync.Mutex
	reg *purchase.Registry[chan struct{}]
}

var purchaseSeed = maphash.MakeSeed()

// shard returns the user's shard.
func (p *purchases) shard(userID string) *purchaseShard {
	return &p.shards[maphash.String(purchaseSeed, userID)%purchaseShards]
}

// purchasesOf returns the campaign's registry, creating it.
func (e *Engine) purchasesOf(campaignID string) *purchases {
	e.purchasesMu.RLock()
	p := e.purchases[campaignID]
	e.purchasesMu.RUnlock()
	if p != nil {
		return p
	}
	e.purchasesMu.Lock()
	defer e.purchasesMu.Unlock()
	if p = e.purchases[campaignID]; p == nil {
		p = &purchases{}
		for i := range p.shards {
			p.shards[i].reg = purchase.New[chan struct{}]()
		}
		e.purchases[campaignID] = p
	}
	return p
}

// claim is purchase.Registry.Claim under the user's shard lock. A nil w
// is replaced by a new channel only when the claim must wait (most do
// not: no allocation).
func (p *purchases) claim(userID, skuID, requestID string, w *chan struct{}) purchase.Decision {
	s := p.shard(userID)
	s.mu.Lock()
	defer s.mu.Unlock()
	if *w == nil {
		if d := s.reg.Claim(userID, skuID, requestID, nil); d.Verdict != purchase.Wait {
			return d
		}
		s.reg.Forget(userID, nil)
		*w = make(chan struct{}, 1)
	}
	return s.reg.Claim(userID, skuID, requestID, *w)
}

// done is purchase.Registry.Done; it wakes the waiters it returns.
func (p *purchases) done(userID, skuID, requestID string, unknown bool) {
	s := p.shard(userID)
	s.mu.Lock()
	w := s.reg.Done(userID, skuID, requestID, unknown)
	s.mu.Unlock()
	wakeAll(w)
}

// probeDone is purchase.Registry.ProbeDone; it wakes the waiters it returns.
func (p *purchases) probeDone(userID, skuID string, still []string) {
	s := p.shard(userID)
	s.mu.Lock()
	w := s.reg.ProbeDone(userID, skuID, still)
	s.mu.Unlock()
	wakeAll(w)
}

// forget is purchase.Registry.Forget.
func (p *purchases) forget(userID string, w chan struct{}) {
	s := p.shard(userID)
	s.mu.Lock()
	s.reg.Forget(userID, w)
	s.mu.Unlock()
}

// apply is purchase.Registry.Apply, event by event in the users' shards;
// it wakes the waiters and returns the conflicts.
func (p *purchases) apply(skuID string, events []purchase.Event) (conflicts []string) {
	for i := range events {
		s := p.shard(events[i].UserID)
		s.mu.Lock()
		w, c := s.reg.Apply(skuID, events[i:i+1])
		s.mu.Unlock()
		wakeAll(w)
		conflicts = append(conflicts, c...)
	}
	return conflicts
}

// resync is purchase.Registry.Resync, shard by shard.
func (p *purchases) resync(skuID string, live, entered map[string]string) (conflicts []string) {
	lives, entries := byShard(live), byShard(entered)
	for i := range p.shards {
		s := &p.shards[i]
		s.mu.Lock()
		w, c := s.reg.Resync(skuID, lives[i], entries[i])
		s.mu.Unlock()
		wakeAll(w)
		conflicts = append(conflicts, c...)
	}
	return conflicts
}

// byShard splits a map by user into the registry's shards.
func byShard(m map[string]string) (parts [purchaseShards]map[string]string) {
	for user, id := range m {
		i := maphash.String(purchaseSeed, user) % purchaseShards
		if parts[i] == nil {
			parts[i] = make(map[string]string)
		}
		parts[i][user] = id
	}
	return parts
}

// wakeAll hands each waiter its wake-up (the channels have room for one).
func wakeAll(ws []chan struct{}) {
	for _, w := range ws {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

// campaignScoped reports whether the SKU's campaign limits purchases per
// campaign, by its durable definition.
func (s *SKU) campaignScoped() bool {
	v := s.durable.Load()
	return v != nil && v.Definition.PurchaseLimit == sku.PurchaseLimitCampaign
}

// claimsFor reports whether a reserve (entry false) or an entry (entry
// true) on the SKU claims its user first: on a SKU of a campaign-scope
// campaign that sells that way. A reserve on a lottery SKU or an entry on
// a SKU sold first come, first served goes straight to the SKU, whose
// answer (LOTTERY_SALE, NOT_LOTTERY) decides nothing.
func (s *SKU) claimsFor(entry bool) bool {
	v := s.durable.Load()
	return v != nil && v.Definition.PurchaseLimit == sku.PurchaseLimitCampaign && (v.Definition.Lottery != nil) == entry
}

// entriesClosedAt is sku.Definition.EntriesClosedAt of the SKU's durable
// definition.
func (s *SKU) entriesClosedAt(nowMs int64) bool {
	v := s.durable.Load()
	return v != nil && v.Definition.EntriesClosedAt(nowMs)
}

// applyPurchaseEvents hands a SKU's durable events to its campaign's
// registry (on the goroutine that releases the log's waiters, before the batch's callers
// wake). Events of a batch whose log failed are never applied: its claims
// stay until the SKU recovers (resyncPurchases).
func (s *SKU) applyPurchaseEvents(events []purchase.Event) {
	if len(events) == 0 {
		return
	}
	s.logConflicts(s.engine.purchasesOf(s.campaignID).apply(s.skuID, events))
}

// logConflicts logs users seen with live purchases on two SKUs of a
// campaign-scope campaign (the registry's rule never lets it happen; the
// campaign audit reports it too).
func (s *SKU) logConflicts(users []string) {
	for _, u := range users {
		s.engine.cfg.Logger.Error("a second live purchase in a campaign-scope campaign", "campaign", s.campaignID,
			"sku", s.skuID, "user", u)
	}
}

// resyncPurchases tells the campaign's registry the SKU's live
// reservations and lottery entries as rebuilt from disk (on the actor,
// after a recovery, before it decides anything).
func (s *SKU) resyncPurchases(m *sku.Machine) {
	if m.Definition().PurchaseLimit != sku.PurchaseLimitCampaign {
		return
	}
	s.logConflicts(s.engine.purchasesOf(s.campaignID).resync(s.skuID, m.LivePurchases(), m.LiveEntries()))
}

// unknownResult reports whether err leaves a reserve's result unknown: it
// may have been decided (a timeout, a log failure after the decision).
// The other errors say nothing was decided.
func unknownResult(err error) bool {
	return errors.Is(err, ErrResultUnknown) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// admit runs fn, a decision of userID's request requestID on h (a SKU of
// a campaign-scope campaign), behind the user's claim, stepping the
// protocol's purchase.Attempt: Run runs fn and ends the claim with fn's
// error (unknown when the answer was lost); AnswerHeld runs nothing (the
// caller answers the Decision); Block waits for a decision of the user on
// another SKU; Lookup looks up lost answers. ErrBusy when too many wait or
// the wait outlasts ctx, ErrUnavailable when a lost answer could not be
// looked up: nothing was decided.
func (e *Engine) admit(ctx context.Context, h *SKU, userID, requestID string, fn func() error) (purchase.Decision, error) {
	claims := &userClaims{p: e.purchasesOf(h.campaignID)}
	a := purchase.NewAttempt(claims, userID, h.skuID, requestID)
	step, d := a.Next()
	for {
		switch step {
		case purchase.Run:
			err := fn()
			a.Ran(unknownResult(err))
			return d, err
		case purchase.AnswerHeld:
			return d, nil
		case purchase.Refuse:
			return d, ErrBusy
		case purchase.Unknown:
			return d, ErrUnavailable
		case purchase.Block:
			select {
			case <-claims.wake:
			case <-ctx.Done():
				a.Abandon()
				return d, ErrBusy
			}
			step, d = a.Next()
		case purchase.Lookup:
			step, d = a.Probed(e.probe(ctx, h.campaignID, d.SKU, d.RequestIDs))
		}
	}
}

// userClaims is purchase.Claims for one Attempt on a campaign's sharded
// registry. Its waiter, wake, is made only when a claim must wait (most
// do not: no allocation).
type userClaims struct {
	p    *purchases
	wake chan struct{}
}

func (u *userClaims) Claim(userID, skuID, requestID string) purchase.Decision {
	return u.p.claim(userID, skuID, requestID, &u.wake)
}

func (u *userClaims) Done(userID, skuID, requestID string, unknown bool) {
	u.p.done(userID, skuID, requestID, unknown)
}

func (u *userClaims) ProbeDone(userID, skuID string, stillUnknown []string) {
	u.p.probeDone(userID, skuID, stillUnknown)
}

func (u *userClaims) Forget(userID string) { u.p.forget(userID, u.wake) }

// reserveScoped runs the reserve c on h, a SKU of a campaign-scope
// campaign, behind the user's claim (admit); a Held claim is answered by
// heldAnswer.
func (e *Engine) reserveScoped(ctx context.Context, h *SKU, c *call) (sku.Result, error) {
	userID, requestID := c.UserID, c.RequestID
	var res sku.Result
	d, err := e.admit(ctx, h, userID, requestID, func() error {
		var err error
		res, err = resultOf(e.runOn(ctx, h, c))
		return err
	})
	if d.Verdict == purchase.Proceed {
		return res, err
	}
	c.free()
	if err != nil {
		return sku.Result{}, err
	}
	return e.heldAnswer(ctx, h, userID, requestID, d)
}

// heldAnswer answers a reserve of requestID on h by a user whose claim is
// held on another SKU (d): ALREADY_PURCHASED with the live reservation, or
// ALREADY_ENTERED with the lottery entry that may still win, not recorded;
// unless h decided requestID already (its request filter may know it, and
// a look-up through its inbox finds it): then its one result again
// (sku.KnownRequest), so that a retry of a request_id accepted before a
// purchase elsewhere still gets its 202.
func (e *Engine) heldAnswer(ctx context.Context, h *SKU, userID, requestID string, d purchase.Decision) (sku.Result, error) {
	if h.MayKnowRequest(requestID) {
		c := newCall(core.KindLookup)
		c.RequestID = requestID
		c, err := e.runOn(ctx, h, c)
		if err != nil {
			return sku.Result{}, err
		}
		res, found := c.Result, c.Found
		c.free()
		if found {
			return sku.KnownRequest(res, userID), nil
		}
	}
	return purchase.HeldResult(d, h.campaignID, userID), nil
}

// probe looks up request_ids whose reserve answers were lost on a SKU,
// through its inbox (behind the lost calls: FIFO), and returns those it
// could not (the SKU unavailable, ctx ended). Found or not, a look-up that
// answers is definite: any reservation the lost call made is durable
// before the answer, and the durable path told the registry already.
func (e *Engine) probe(ctx context.Context, campaignID, skuID string, requestIDs []string) (still []string) {
	for _, id := range requestIDs {
		c := newCall(core.KindLookup)
		c.RequestID = id
		c, err := e.run(ctx, campaignID, skuID, c)
		if err != nil {
			still = append(still, id)
			continue
		}
		c.free()
	}
	return still
}

// runOn is run for a SKU handle already found.
func (e *Engine) runOn(ctx context.Context, h *SKU, c *call) (*call, error) {
	if err := h.do(ctx, c); err != nil {
		return nil, err
	}
	if c.Err != nil {
		err := c.Err
		c.free()
		return nil, err
	}
	return c, nil
}

// reserveBatchScoped is ReserveBatch on a SKU of a campaign-scope
// campaign, the simplest honest way: each item steps its user's
// purchase.Attempt in order; those let through (Run) go to h as one batch
// call and end their claims with its answers; AnswerHeld, Refuse and
// Unknown are answered at once; a Lookup is run there; an item that must
// Block (its user's reserve on another SKU is being decided) gives its
// place back and is reserved alone after the batch (reserveScoped, which
// waits).
func (e *Engine) reserveBatchScoped(ctx context.Context, h *SKU, items []ReserveItem) []ItemResult {
	p := e.purchasesOf(h.campaignID)
	out := make([]ItemResult, len(items))
	var granted, alone []int
	attempts := make([]purchase.Attempt, len(items))
	for i, it := range items {
		attempts[i] = purchase.NewAttempt(&userClaims{p: p}, it.UserID, h.skuID, it.RequestID)
		a := &attempts[i]
		step, d := a.Next()
		for step == purchase.Lookup {
			step, d = a.Probed(e.probe(ctx, h.campaignID, d.SKU, d.RequestIDs))
		}
		switch step {
		case purchase.Run:
			granted = append(granted, i)
		case purchase.AnswerHeld:
			out[i].Result, out[i].Err = e.heldAnswer(ctx, h, it.UserID, it.RequestID, d)
		case purchase.Refuse:
			out[i].Err = ErrBusy
		case purchase.Unknown:
			out[i].Err = ErrUnavailable
		case purchase.Block: // reserved alone after the batch, which waits
			a.Abandon()
			alone = append(alone, i)
		}
	}
	if len(granted) > 0 {
		sent := make([]ReserveItem, len(granted))
		for j, i := range granted {
			sent[j] = items[i]
		}
		got := e.reserveBatchOn(ctx, h, sent)
		for j, i := range granted {
			out[i] = got[j]
			attempts[i].Ran(unknownResult(got[j].Err))
		}
	}
	for _, i := range alone {
		out[i].Result, out[i].Err = e.ReserveWith(ctx, h.campaignID, h.skuID, items[i].RequestID, items[i].UserID, items[i].Holder)
	}
	return out
}
