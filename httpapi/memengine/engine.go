// Package memengine is the in-memory twin of the engine behind
// httpapi.Engine, for the HTTP service's tests: the real pure state machine
// (sku.Machine) of each SKU behind one mutex, with no log, no disk and no
// actor goroutines. A decided command is at once "durable". Hooks let a
// test fail, hold or order commands at two points (before the decision,
// after it) instead of sleeping, and set the load a SKU publishes.
//
// It follows hashicorp/raft's habit of an in-memory implementation of each
// interface it defines (InmemStore, InmemTransport). What it does not
// model: durability and recovery, the request filter's false positives (its
// MayKnowRequest is exact), the actor's queue and rate (published as set by
// SetLoad), and the tick loop (a test calls Expire).
package memengine

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/purchase"
	"github.com/seckill/seckill/actors/sku"
)

// Kind names a command, for hooks.
type Kind uint8

// Kinds of commands.
const (
	KindReserve Kind = iota + 1
	KindPay
	KindCancel
	KindRelease
	KindGet
	KindLookup
	KindDefine
	KindPause
	KindResume
	KindAudit
	KindRefunds
	KindSnapshot
	KindEnter // lottery.go
	KindDraw
	KindEntry
	KindFreeze
	// KindReserveBatch is a batch reserve: the hooks see it once, with
	// Call.Items, and Decided gets no result (each item has its own).
	KindReserveBatch
)

var kindNames = [...]string{
	KindReserve: "reserve", KindPay: "pay", KindCancel: "cancel", KindRelease: "release",
	KindGet: "get", KindLookup: "lookup", KindDefine: "define", KindPause: "pause",
	KindResume: "resume", KindAudit: "audit", KindRefunds: "refunds", KindSnapshot: "snapshot",
	KindEnter: "enter", KindDraw: "draw", KindEntry: "entry", KindFreeze: "freeze",
	KindReserveBatch: "reserve_batch",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Call is one command as a hook sees it. Fields that do not apply to the
// kind are empty; commands by reservation id carry the ids it names.
type Call struct {
	Kind              Kind
	CampaignID, SKUID string
	RequestID, UserID string               // reserve, lookup
	ReservationID     string               // pay, cancel, release, get
	Items             []actors.ReserveItem // reserve_batch
}

// Hooks inject faults, latency and orderings. Both run on the caller's
// goroutine without the twin's lock, so they may block; after each, the
// twin answers ctx.Err() if ctx is done.
type Hooks struct {
	// Before runs before the command is decided. A non-nil error is
	// answered instead and nothing is applied (actors.ErrUnavailable, a
	// ctx error, ...).
	Before func(ctx context.Context, c Call) error
	// Decided runs after the command was decided and applied, with its
	// result (for commands that have one), before the answer is returned.
	// Blocking here holds the answer back while the state has changed. A
	// non-nil error is answered instead, with the command still applied
	// (actors.ErrResultUnknown, a ctx error).
	Decided func(ctx context.Context, c Call, res sku.Result) error
}

// Load is what a SKU publishes about its queue, rate and log commits
// (actors.Stats).
type Load struct {
	Queued                    int64
	OldestWait                time.Duration
	RatePerSecond             float64
	CommitWait, CommitLatency time.Duration
	Commits                   uint64
}

// Config configures an Engine. Zero values take the defaults.
type Config struct {
	// Clock is the time of every decision. Default: time.Now.
	Clock func() time.Time
	// MaxSKUs bounds the SKUs, as actors.Config.MaxSKUs does (Define and
	// MakeRoom answer actors.ErrTooManySKUs beyond). Default:
	// actors.DefaultMaxSKUs.
	MaxSKUs int
	// Rand draws each SKU's reservation id key. Default: crypto/rand.
	Rand io.Reader
}

type skuKey struct{ campaignID, skuID string }

// skuState is one SKU: its Machine and what the twin publishes beside it.
type skuState struct {
	m           *sku.Machine
	index       uint64 // records decided so far: the twin's log index
	load        Load
	unavailable bool
	// known holds the request_ids answered ACCEPTED or SOLD_OUT, as the
	// real request filter does, without false positives.
	known map[string]struct{}
	act   activity // activity.go
	// purchases is the purchase registry of the SKU's campaign when its
	// purchase_limit is "campaign" (shared by its SKUs), nil otherwise.
	// Everything happens under e.mu, so no claim is ever waited for.
	purchases *purchase.Registry[int]
}

// Engine is the in-memory twin. It satisfies httpapi.Engine (checked in
// httpapi's tests) and is safe for concurrent use.
type Engine struct {
	cfg   Config
	hooks atomic.Pointer[Hooks]

	mu        sync.Mutex
	skus      map[skuKey]*skuState
	held      map[skuKey]struct{}                // places held by MakeRoom
	purchases map[string]*purchase.Registry[int] // campaign-scope campaigns
}

// New returns an empty twin.
func New(cfg Config) *Engine {
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.MaxSKUs <= 0 {
		cfg.MaxSKUs = actors.DefaultMaxSKUs
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	e := &Engine{cfg: cfg, skus: make(map[skuKey]*skuState), held: make(map[skuKey]struct{}),
		purchases: make(map[string]*purchase.Registry[int])}
	e.hooks.Store(&Hooks{})
	return e
}

// SetHooks replaces the hooks; the zero Hooks removes them. Calls already
// past a hook point are not affected.
func (e *Engine) SetHooks(h Hooks) { e.hooks.Store(&h) }

// SetLoad sets the queue and rate a SKU publishes; false when unknown.
func (e *Engine) SetLoad(campaignID, skuID string, l Load) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.skus[skuKey{campaignID, skuID}]
	if s != nil {
		s.load = l
	}
	return s != nil
}

// SetUnavailable makes a SKU unavailable (as after a log failure: every
// command answers actors.ErrUnavailable, its stats say Unavailable) or
// available again; false when unknown.
func (e *Engine) SetUnavailable(campaignID, skuID string, unavailable bool) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.skus[skuKey{campaignID, skuID}]
	if s != nil {
		s.unavailable = unavailable
	}
	return s != nil
}

// Expire closes the reservations of every SKU whose expire_at has passed
// at the clock's time, as the real engine's tick loop does. It returns how
// many records that decided.
func (e *Engine) Expire() int {
	now := e.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, s := range e.skus {
		for {
			// NextExpiry answers 0 past many settled rows: Expire then
			// moves its cursor over them, closing nothing.
			at, ok := s.m.NextExpiry()
			if !ok || at > now {
				break
			}
			out := s.m.Expire(now, 1024, nil)
			if len(out) == 0 && at != 0 {
				break // nothing due after all
			}
			s.decided(out)
			s.act.expired += uint64(len(out))
			n += len(out)
		}
	}
	return n
}

// Hash returns a SKU's state hash (sku.Machine.Hash); false when unknown.
func (e *Engine) Hash(campaignID, skuID string) ([32]byte, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.skus[skuKey{campaignID, skuID}]
	if s == nil {
		return [32]byte{}, false
	}
	return s.m.Hash(), true
}

func (e *Engine) now() int64 { return e.cfg.Clock().UnixMilli() }

// run runs one command: the Before hook, decide under the lock, the
// Decided hook. decide returns the result the Decided hook sees.
func (e *Engine) run(ctx context.Context, c Call, decide func() (sku.Result, error)) error {
	h := e.hooks.Load()
	if h.Before != nil {
		if err := h.Before(ctx, c); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	e.mu.Lock()
	res, err := decide()
	e.mu.Unlock()
	if err != nil {
		return err
	}
	if h.Decided != nil {
		if err := h.Decided(ctx, c, res); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// lockedSKU returns a known, available SKU; the caller holds e.mu.
func (e *Engine) lockedSKU(campaignID, skuID string) (*skuState, error) {
	s := e.skus[skuKey{campaignID, skuID}]
	switch {
	case s == nil:
		return nil, actors.ErrUnknownSKU
	case s.unavailable:
		return nil, actors.ErrUnavailable
	}
	return s, nil
}

// decided counts the records of one decision and tells the campaign's
// purchase registry the reservations they made or closed ("durable" at
// once, as everything in the twin).
func (s *skuState) decided(out []sku.Record) {
	s.index += uint64(len(out))
	if s.purchases != nil {
		s.purchases.Apply(s.m.Definition().SKUID, purchase.Events(s.m, out))
	}
}

// Reserve implements httpapi.Reserver on sku.Machine.Reserve.
func (e *Engine) Reserve(ctx context.Context, campaignID, skuID, requestID, userID string) (sku.Result, error) {
	return e.ReserveWith(ctx, campaignID, skuID, requestID, userID, sku.Holder{})
}

// ReserveWith implements httpapi.Reserver on sku.Machine.ReserveWith.
func (e *Engine) ReserveWith(ctx context.Context, campaignID, skuID, requestID, userID string, holder sku.Holder) (sku.Result, error) {
	var res sku.Result
	err := e.run(ctx, Call{Kind: KindReserve, CampaignID: campaignID, SKUID: skuID, RequestID: requestID, UserID: userID},
		func() (sku.Result, error) {
			s, err := e.lockedSKU(campaignID, skuID)
			if err != nil {
				return res, err
			}
			res = s.reserve(e.now(), requestID, userID, holder)
			return res, invalid(res)
		})
	return res, err
}

// reserve decides one reserve at now (Unix ms) on the SKU's machine and
// counts it (records, activity, recorded request_ids): the one rule for a
// reserve alone and for each item of a batch. The caller holds e.mu.
func (s *skuState) reserve(now int64, requestID, userID string, holder sku.Holder) sku.Result {
	d, done := s.claim(userID, requestID, false)
	if d.Verdict == purchase.Held { // the request_id's own result first (actors: heldAnswer)
		if found, ok := s.m.Lookup(requestID); ok {
			return sku.KnownRequest(found, userID)
		}
		return purchase.HeldResult(d, s.m.Definition().CampaignID, userID)
	}
	defer done()
	res, out := s.m.ReserveWith(now, requestID, userID, holder, nil)
	s.decided(out)
	s.act.reserved(res)
	if !res.Duplicate && (res.Outcome == sku.OutcomeAccepted || res.Outcome == sku.OutcomeSoldOut) {
		s.known[requestID] = struct{}{}
	}
	return res
}

// claim steps userID's purchase.Attempt for requestID on the SKU when its
// campaign's purchase_limit is "campaign" and the SKU sells that way
// (entry: a lottery; actors: SKU.claimsFor, Engine.admit). The twin
// decides at once under its lock, so no other decision is ever pending
// and no answer is ever lost: the Attempt says Run (then call done after
// the decision) or AnswerHeld, never Block, Lookup or Refuse. Otherwise
// it answers Proceed and done does nothing.
func (s *skuState) claim(userID, requestID string, entry bool) (d purchase.Decision, done func()) {
	if s.purchases == nil || s.m.Lottery() != entry {
		return purchase.Decision{Verdict: purchase.Proceed}, func() {}
	}
	a := purchase.NewAttempt(purchase.Direct[int]{Registry: s.purchases}, userID, s.m.Definition().SKUID, requestID)
	switch step, d := a.Next(); step {
	case purchase.Run:
		return d, func() { a.Ran(false) }
	case purchase.AnswerHeld:
		return d, func() {}
	default:
		panic("memengine: a claim under the twin's lock answered " + step.String())
	}
}

// invalid is actors' answer to an INVALID outcome.
func invalid(res sku.Result) error {
	if res.Outcome == sku.OutcomeInvalid {
		return actors.ErrInvalidArgument
	}
	return nil
}

// byReservation runs a command on the reservation an id names. A wrong tag
// names no reservation: NOT_FOUND, as in the real engine.
func (e *Engine) byReservation(ctx context.Context, kind Kind, reservationID string,
	decide func(s *skuState, now int64, seq uint32) (sku.Result, error)) (sku.Result, error) {
	campaignID, skuID, seq, tag, err := sku.ParseReservationID(reservationID)
	if err != nil {
		return sku.Result{}, err
	}
	var res sku.Result
	err = e.run(ctx, Call{Kind: kind, CampaignID: campaignID, SKUID: skuID, ReservationID: reservationID},
		func() (sku.Result, error) {
			s, err := e.lockedSKU(campaignID, skuID)
			if err != nil {
				return res, err
			}
			if !s.m.ValidTag(seq, tag) {
				res = sku.Result{Outcome: sku.OutcomeNotFound}
				return res, nil
			}
			res, err = decide(s, e.now(), seq)
			return res, err
		})
	return res, err
}

// Pay implements httpapi.Reserver on sku.Machine.Pay.
func (e *Engine) Pay(ctx context.Context, reservationID, paymentID string, amount int64) (sku.Result, error) {
	return e.byReservation(ctx, KindPay, reservationID, func(s *skuState, now int64, seq uint32) (sku.Result, error) {
		res, out := s.m.Pay(now, seq, paymentID, amount, nil)
		s.decided(out)
		return res, invalid(res)
	})
}

// Cancel implements httpapi.Reserver on sku.Machine.Close.
func (e *Engine) Cancel(ctx context.Context, reservationID string) (sku.Result, error) {
	return e.byReservation(ctx, KindCancel, reservationID, func(s *skuState, now int64, seq uint32) (sku.Result, error) {
		res, out := s.m.Close(now, seq, sku.ReasonCancelled, nil)
		s.decided(out)
		return res, invalid(res)
	})
}

// Release implements httpapi.Reserver on sku.Machine.Release.
func (e *Engine) Release(ctx context.Context, reservationID string) (sku.Result, error) {
	return e.byReservation(ctx, KindRelease, reservationID, func(s *skuState, now int64, seq uint32) (sku.Result, error) {
		res, out := s.m.Release(now, seq, nil)
		s.decided(out)
		return res, invalid(res)
	})
}

// Get implements httpapi.Reserver: actors.ErrNotFound for no reservation.
func (e *Engine) Get(ctx context.Context, reservationID string) (sku.View, error) {
	res, err := e.byReservation(ctx, KindGet, reservationID, func(s *skuState, _ int64, seq uint32) (sku.Result, error) {
		v, ok := s.m.Get(seq)
		if !ok {
			return sku.Result{Outcome: sku.OutcomeNotFound}, nil
		}
		return sku.Result{Reservation: v}, nil
	})
	if err == nil && res.Outcome == sku.OutcomeNotFound {
		err = actors.ErrNotFound
	}
	return res.Reservation, err
}

// Lookup implements httpapi.Reserver: actors.ErrNotFound when nothing is
// recorded for requestID.
func (e *Engine) Lookup(ctx context.Context, campaignID, skuID, requestID string) (sku.Result, error) {
	var res sku.Result
	found := false
	err := e.run(ctx, Call{Kind: KindLookup, CampaignID: campaignID, SKUID: skuID, RequestID: requestID},
		func() (sku.Result, error) {
			s, err := e.lockedSKU(campaignID, skuID)
			if err != nil {
				return res, err
			}
			res, found = s.m.Lookup(requestID)
			return res, nil
		})
	if err == nil && !found {
		err = actors.ErrNotFound
	}
	return res, err
}

// SKUStats implements httpapi.StatsReader.
func (e *Engine) SKUStats(campaignID, skuID string) (actors.Stats, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.skus[skuKey{campaignID, skuID}]
	if s == nil {
		return actors.Stats{}, false
	}
	return s.stats(campaignID, skuID), true
}

func (s *skuState) stats(campaignID, skuID string) actors.Stats {
	return actors.Stats{
		CampaignID: campaignID, SKUID: skuID,
		Definition: s.m.Definition(), Counts: s.m.Counts(), Paused: s.m.Paused(),
		Unavailable: s.unavailable,
		Queued:      s.load.Queued, OldestWait: s.load.OldestWait, RatePerSecond: s.load.RatePerSecond,
		CommitWait: s.load.CommitWait, CommitLatency: s.load.CommitLatency, Commits: s.load.Commits,
	}
}

// MayKnowRequest implements httpapi.StatsReader, exactly: true only for a
// request_id the SKU answered ACCEPTED or SOLD_OUT (and for an unknown SKU).
func (e *Engine) MayKnowRequest(campaignID, skuID, requestID string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.skus[skuKey{campaignID, skuID}]
	if s == nil {
		return true
	}
	_, ok := s.known[requestID]
	return ok
}

// AllStats implements httpapi.StatsReader.
func (e *Engine) AllStats() []actors.Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]actors.Stats, 0, len(e.skus))
	for k, s := range e.skus {
		out = append(out, s.stats(k.campaignID, k.skuID))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CampaignID != out[j].CampaignID {
			return out[i].CampaignID < out[j].CampaignID
		}
		return out[i].SKUID < out[j].SKUID
	})
	return out
}

// Define implements httpapi.Admin on sku.Machine.Define; a new SKU beyond
// Config.MaxSKUs (counting places held by MakeRoom) is refused with
// actors.ErrTooManySKUs.
func (e *Engine) Define(ctx context.Context, d sku.Definition) error {
	if err := d.Validate(); err != nil {
		return err
	}
	return e.run(ctx, Call{Kind: KindDefine, CampaignID: d.CampaignID, SKUID: d.SKUID}, func() (sku.Result, error) {
		k := skuKey{d.CampaignID, d.SKUID}
		s := e.skus[k]
		if s == nil {
			if _, held := e.held[k]; !held && len(e.skus)+len(e.held) >= e.cfg.MaxSKUs {
				return sku.Result{}, fmt.Errorf("%w: 1 new SKU, at most %d", actors.ErrTooManySKUs, e.cfg.MaxSKUs)
			}
			if _, err := io.ReadFull(e.cfg.Rand, d.IDKey[:]); err != nil {
				return sku.Result{}, fmt.Errorf("drawing the reservation id key: %w", err)
			}
			s = &skuState{m: sku.New(), known: make(map[string]struct{})}
		} else {
			if s.unavailable {
				return sku.Result{}, actors.ErrUnavailable
			}
			d.IDKey = s.m.Definition().IDKey // the key never changes
		}
		if err := sku.DrawLotterySecrets(&d, s.m, e.cfg.Rand); err != nil {
			return sku.Result{}, err
		}
		for k, other := range e.skus {
			if k.campaignID != d.CampaignID {
				continue
			}
			defined := other.m.Definition()
			if err := sku.CheckCampaignPurchaseLimit(&defined, &d); err != nil {
				return sku.Result{}, err
			}
		}
		o, out, err := s.m.Define(e.now(), d, nil)
		if err != nil {
			return sku.Result{Outcome: o}, err
		}
		if d.PurchaseLimit == sku.PurchaseLimitCampaign && s.purchases == nil {
			s.purchases = e.purchases[d.CampaignID]
			if s.purchases == nil {
				s.purchases = purchase.New[int]()
				e.purchases[d.CampaignID] = s.purchases
			}
		}
		s.decided(out)
		delete(e.held, k)
		e.skus[k] = s
		return sku.Result{Outcome: o}, nil
	})
}

// MakeRoom implements httpapi.Admin: it holds places for the SKUs of defs
// that do not exist yet, or refuses them all with actors.ErrTooManySKUs.
func (e *Engine) MakeRoom(defs []sku.Definition) (release func(), err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var added []skuKey
	for _, d := range defs {
		k := skuKey{d.CampaignID, d.SKUID}
		if _, ok := e.skus[k]; ok {
			continue
		}
		if _, ok := e.held[k]; ok {
			continue
		}
		added = append(added, k)
		e.held[k] = struct{}{}
	}
	if n := len(e.skus) + len(e.held); n > e.cfg.MaxSKUs {
		for _, k := range added {
			delete(e.held, k)
		}
		return nil, fmt.Errorf("%w: %d new SKUs, room for %d more", actors.ErrTooManySKUs, len(added), max(0, e.cfg.MaxSKUs-(n-len(added))))
	}
	return func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, k := range added {
			delete(e.held, k)
		}
	}, nil
}

// Pause implements httpapi.Admin on sku.Machine.Pause.
func (e *Engine) Pause(ctx context.Context, campaignID, skuID string) error {
	return e.simple(ctx, KindPause, campaignID, skuID, (*sku.Machine).Pause)
}

// Resume implements httpapi.Admin on sku.Machine.Resume.
func (e *Engine) Resume(ctx context.Context, campaignID, skuID string) error {
	return e.simple(ctx, KindResume, campaignID, skuID, (*sku.Machine).Resume)
}

func (e *Engine) simple(ctx context.Context, kind Kind, campaignID, skuID string,
	step func(*sku.Machine, int64, []sku.Record) (sku.Outcome, []sku.Record)) error {
	return e.run(ctx, Call{Kind: kind, CampaignID: campaignID, SKUID: skuID}, func() (sku.Result, error) {
		s, err := e.lockedSKU(campaignID, skuID)
		if err != nil {
			return sku.Result{}, err
		}
		o, out := step(s.m, e.now(), nil)
		s.decided(out)
		return sku.Result{Outcome: o}, nil
	})
}

// Audit implements httpapi.Admin on sku.Machine.Audit.
func (e *Engine) Audit(ctx context.Context, campaignID, skuID string) (sku.Audit, error) {
	var a sku.Audit
	err := e.run(ctx, Call{Kind: KindAudit, CampaignID: campaignID, SKUID: skuID}, func() (sku.Result, error) {
		s, err := e.lockedSKU(campaignID, skuID)
		if err == nil {
			a = s.m.Audit()
		}
		return sku.Result{}, err
	})
	return a, err
}

// Refunds implements httpapi.Admin on sku.Machine.Refunds.
func (e *Engine) Refunds(ctx context.Context, campaignID, skuID string) ([]sku.Refund, error) {
	var r []sku.Refund
	err := e.run(ctx, Call{Kind: KindRefunds, CampaignID: campaignID, SKUID: skuID}, func() (sku.Result, error) {
		s, err := e.lockedSKU(campaignID, skuID)
		if err == nil {
			r = s.m.Refunds()
		}
		return sku.Result{}, err
	})
	return r, err
}

// Snapshot implements httpapi.Admin: it encodes the SKU's frozen state in
// memory (the real state codec) and reports its size and index; there is
// no file (Path is empty) and no log to truncate.
func (e *Engine) Snapshot(ctx context.Context, campaignID, skuID string) (actors.SnapshotInfo, error) {
	var info actors.SnapshotInfo
	var frozen *sku.Frozen
	err := e.run(ctx, Call{Kind: KindSnapshot, CampaignID: campaignID, SKUID: skuID}, func() (sku.Result, error) {
		s, err := e.lockedSKU(campaignID, skuID)
		if err == nil {
			frozen = s.m.Freeze()
			info.Index, info.Reservations = s.index, s.m.Counts().Reservations
		}
		return sku.Result{}, err
	})
	if err != nil {
		return actors.SnapshotInfo{}, err
	}
	start := time.Now()
	var buf bytes.Buffer
	if info.Bytes, err = frozen.Encode(&buf); err != nil {
		return actors.SnapshotInfo{}, err
	}
	info.Took = time.Since(start)
	return info, nil
}

// CampaignAudit implements httpapi.Admin: every SKU's audit and, with
// purchase_limit "campaign", the users holding live purchases or lottery
// entries on two SKUs (purchase.Overlaps), all read at one instant under
// the twin's lock.
func (e *Engine) CampaignAudit(ctx context.Context, campaignID string) (actors.CampaignAudit, error) {
	out := actors.CampaignAudit{CampaignID: campaignID}
	err := e.run(ctx, Call{Kind: KindAudit, CampaignID: campaignID}, func() (sku.Result, error) {
		var keys []skuKey
		for k := range e.skus {
			if k.campaignID == campaignID {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			return sku.Result{}, actors.ErrUnknownSKU
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i].skuID < keys[j].skuID })
		live := make([]map[string]string, 0, len(keys))
		holds := make([]map[string]string, 0, len(keys))
		for _, k := range keys {
			s, err := e.lockedSKU(k.campaignID, k.skuID)
			if err != nil {
				return sku.Result{}, err
			}
			out.SKUs = append(out.SKUs, actors.SKUAudit{SKUID: k.skuID, Audit: s.m.Audit()})
			live = append(live, s.m.LivePurchases())
			holds = append(holds, purchase.Holds(k.skuID, live[len(live)-1], s.m.LiveEntries()))
			out.PurchaseLimit = s.m.Definition().PurchaseLimit
		}
		out.LiveUsers = purchase.Users(live)
		if out.PurchaseLimit == sku.PurchaseLimitCampaign {
			for user, ids := range purchase.Overlaps(holds) {
				out.Violations = append(out.Violations, actors.OverlapViolation(user, ids))
			}
			sort.Strings(out.Violations)
		}
		return sku.Result{}, nil
	})
	return out, err
}
