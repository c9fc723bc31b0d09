package core

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/seckill/seckill/actors/sku"
)

// Config configures a Core. Durations are wall-clock time as measured by
// the now arguments of the inputs.
type Config struct {
	// Rand is the source of the SKU's reservation id key, 16 bytes read at
	// its first definition (required).
	Rand io.Reader
	// ExpiryBatch bounds the reservations one Tick closes (default 1024).
	ExpiryBatch int
	// SnapshotEvery: a snapshot is due once this many records were
	// appended since the last one (0: never by count).
	SnapshotEvery uint64
	// SnapshotInterval: a snapshot is due once the last one is this old
	// and records were appended since (0: never by time).
	SnapshotInterval time.Duration
	// SnapshotRetryAfter is the pause after a failed snapshot before a
	// snapshot is due again (default DefaultSnapshotRetryAfter).
	SnapshotRetryAfter time.Duration
	// LogFailureRetry is the first wait before a recovery after a log
	// failure or a failed recovery; it doubles up to MaxLogFailureRetry
	// (0 or negative: never, the SKU stays unavailable until a restart).
	LogFailureRetry time.Duration
	// DrawBatch bounds the records of a lottery draw one round records
	// (default sku.DrawBatch): each round is one group commit.
	DrawBatch int
	// OnRecorded, if set, is called in Decide with the request_id of each
	// reserve whose answer is newly recorded against it (ACCEPTED or
	// SOLD_OUT, not a duplicate): the shell's request filter.
	OnRecorded func(requestID string)
	// Verify runs the Machine's whole audit after every round, O(reservations)
	// (the simulator); the counts are checked after every round regardless
	// (assert.go).
	Verify bool
}

// Defaults and bounds.
const (
	// DefaultExpiryBatch is Config.ExpiryBatch when zero.
	DefaultExpiryBatch = 1024
	// DefaultSnapshotRetryAfter is Config.SnapshotRetryAfter when zero.
	DefaultSnapshotRetryAfter = 10 * time.Second
	// MaxLogFailureRetry bounds the wait between recoveries.
	MaxLogFailureRetry = 30 * time.Second
)

// Core decides the calls of one SKU (see the package documentation for the
// protocol). The zero value is not usable: call New.
type Core struct {
	cfg Config
	m   *sku.Machine
	// lastIndex is the index of the last record appended (the log's
	// LastIndex): Ready's records get lastIndex+1 on.
	lastIndex uint64
	// failed is set while the SKU answers ErrUnavailable: before its first
	// recovery, after a log failure or a failed recovery.
	failed error

	round  round
	output Actions // reused by Advance
	wait   Wait    // reused by Advance

	snap    snapshots
	backoff backoff
	draw    ranking // a lottery draw being ranked or recorded (lottery.go)
}

// round is what the inputs since the last Advance produced.
type round struct {
	records []sku.Record
	marks   []mark    // the calls decided, in order
	answer  []*Call   // answered at once (the SKU was failed)
	at      time.Time // the latest now of the round's inputs
	ticked  bool      // a Tick decided expiry
	tickAt  time.Time
	expired int
	next    int64 // next expire_at after the tick (math.MaxInt64: none)
	more    bool  // reservations were still due after the tick's batch
	recover bool
	// moreDraw: a ranking has records left to record (Actions.MoreDraw).
	moreDraw bool
}

// mark is a decided call and its records, records[first:end].
type mark struct {
	call       *Call
	first, end int
}

// New returns a core for one SKU that has not recovered yet: it answers
// ErrUnavailable until Recovered.
func New(cfg Config) *Core {
	if cfg.ExpiryBatch <= 0 {
		cfg.ExpiryBatch = DefaultExpiryBatch
	}
	if cfg.SnapshotRetryAfter <= 0 {
		cfg.SnapshotRetryAfter = DefaultSnapshotRetryAfter
	}
	return &Core{cfg: cfg, m: sku.New(), failed: fmt.Errorf("%w: not recovered yet", ErrUnavailable)}
}

// Machine returns the SKU's state as decided so far (it may be ahead of the
// log between Decide and Advance, and ahead of the disk until the log is
// durable). Read it, never change it; it is replaced by Recovered.
func (c *Core) Machine() *sku.Machine { return c.m }

// LastIndex returns the index of the last record appended (0: none).
func (c *Core) LastIndex() uint64 { return c.lastIndex }

// Failed returns why the SKU answers ErrUnavailable (it wraps
// ErrUnavailable, and the log's error), or nil while it is healthy.
func (c *Core) Failed() error { return c.failed }

// RequestCapacity returns how many request_ids the shell's request filter
// should be sized for: twice the larger of sale_limit and the request_ids
// already recorded. Ask again after a definition, a recovery and a tick.
func (c *Core) RequestCapacity() uint64 {
	n := c.m.Counts()
	return 2 * max(uint64(n.SaleLimit), uint64(n.Reservations)+uint64(n.Rejected))
}

// Decide decides one call at time now and keeps its records for Ready.
// While the SKU is failed the call is answered at once (ErrUnavailable, in
// the next Advance's Answer) and nothing is decided.
func (c *Core) Decide(now time.Time, call *Call) {
	if c.failed != nil {
		undecided(call)
		c.round.answer = append(c.round.answer, call)
		return
	}
	c.round.at = now
	first := len(c.round.records)
	c.round.records = c.decide(now.UnixMilli(), call, c.round.records)
	call.Wrote = len(c.round.records) > first
	c.round.marks = append(c.round.marks, mark{call: call, first: first, end: len(c.round.records)})
}

// decide runs one call on the Machine at now (Unix ms), appending its
// records to out.
func (c *Core) decide(now int64, call *Call, out []sku.Record) []sku.Record {
	m := c.m
	kind := call.Kind
	if call.Tag != "" && !m.Issued(call.IDCell, call.Seq, call.Tag) {
		kind = 0 // an id the SKU did not issue names no reservation
		call.Result = sku.Result{Outcome: sku.OutcomeNotFound}
	}
	switch kind {
	case KindReserve:
		call.Result, out = m.ReserveWith(now, call.RequestID, call.UserID, call.Holder, out)
		if c.cfg.OnRecorded != nil && !call.Result.Duplicate && recorded(call.Result.Outcome) {
			c.cfg.OnRecorded(call.RequestID)
		}
	case KindPay:
		call.Result, out = m.Pay(now, call.Seq, call.PaymentID, call.Amount, out)
	case KindClose:
		call.Result, out = m.Close(now, call.Seq, call.Reason, out)
	case KindRelease:
		call.Result, out = m.Release(now, call.Seq, out)
	case KindPause:
		call.Outcome, out = m.Pause(now, out)
	case KindResume:
		call.Outcome, out = m.Resume(now, out)
	case KindDefine:
		d := *call.Def
		if m.Defined() {
			d.IDKey = m.Definition().IDKey // the key never changes
		} else if _, err := io.ReadFull(c.cfg.Rand, d.IDKey[:]); err != nil {
			call.Err = fmt.Errorf("drawing the reservation id key: %w", err)
			return out
		}
		if err := sku.DrawLotterySecrets(&d, m, c.cfg.Rand); err != nil {
			call.Err = err
			return out
		}
		call.Outcome, out, call.Err = m.Define(now, d, out)
	case KindGet:
		call.Result.Reservation, call.Found = m.Get(call.Seq)
	case KindLookup:
		call.Result, call.Found = m.Lookup(call.RequestID)
	case KindAudit:
		call.Report.Frozen = m.Freeze() // the recount runs off the actor: Frozen.Audit
	case KindRefunds:
		call.Report.Refunds = m.Refunds()
	case KindHash:
		call.Report.Hash = m.Hash()
	case KindGrant, KindReturn, KindEpoch, KindCell:
		out = decideCell(m, now, call, out)
	case KindReserveBatch:
		out = c.decideItems(now, call, out)
	default:
		out = c.decideLottery(now, call, out)
	}
	return out
}

// recorded reports whether a reserve outcome is recorded against its
// request_id (and so must be repeated to a retry).
func recorded(o sku.Outcome) bool {
	return o == sku.OutcomeAccepted || o == sku.OutcomeSoldOut
}

// Tick runs the timers at now: while the SKU is failed, it makes a due
// recovery (Actions.Recover); otherwise it closes up to ExpiryBatch
// reservations past their expire_at (records for Ready) and checks whether
// a snapshot is due (once the round's records are appended: Advance).
func (c *Core) Tick(now time.Time) {
	if c.failed != nil {
		if c.backoff.due(now) {
			c.backoff.armed = false
			c.round.recover = true
		}
		return
	}
	if !c.m.Defined() {
		return
	}
	c.round.at = now
	ms := now.UnixMilli()
	first := len(c.round.records)
	c.round.records = c.m.Expire(ms, c.cfg.ExpiryBatch, c.round.records)
	expired := len(c.round.records) - first
	c.tickLottery(ms)
	next, ok := c.m.NextExpiry()
	if !ok {
		next = math.MaxInt64
	}
	c.round.ticked, c.round.tickAt = true, now
	c.round.expired += expired
	c.round.next = next
	c.round.more = expired > 0 && next <= ms
}

// Ready is what a round asks the shell to append.
type Ready struct {
	// FirstIndex is the index the first record gets: LastIndex()+1.
	FirstIndex uint64
	// Records are to be appended in order. The slice is the core's: it
	// is valid until the next call to the core.
	Records []sku.Record
	// Ticked is set when the round ran the timers (Tick): only then may
	// Advance freeze the state for a snapshot (Actions.Snapshot), the
	// pause the shell times.
	Ticked bool
}

// Ready returns the records of the round so far. It may be called more
// than once; Advance ends the round.
func (c *Core) Ready() Ready {
	return Ready{FirstIndex: c.lastIndex + 1, Records: c.round.records, Ticked: c.round.ticked}
}

// Wait is a group of replies released once the log is durable up to Index:
// the group commit of one round.
type Wait struct {
	// Index is the last record the replies rest on (it may precede this
	// round: a read rests on earlier records not yet durable).
	Index uint64
	// Calls are released together once Index is durable (then run Settle
	// with the log's verdict). The slice is the core's: copy it; it is
	// valid until the next call to the core.
	Calls []*Call
}

// Actions is what the shell must do after a round. Its slices and
// pointers are the core's, valid until the next call to the core.
type Actions struct {
	// Answer lists calls to answer at once, their Err set: the SKU was
	// failed, or the round's append failed.
	Answer []*Call
	// Wait, when not nil, lists the calls to release once the log is
	// durable up to Wait.Index. It may hold no call when records were
	// appended (by a tick): the state they make is published once durable.
	Wait *Wait
	// Ticked is set when a Tick of the round ran expiry; then Expired is
	// the reservations it closed, NextExpiry the earliest expire_at left
	// (Unix ms, math.MaxInt64: none) and MoreExpiry whether some are
	// already due (tick again at once).
	Ticked     bool
	Expired    int
	NextExpiry int64
	MoreExpiry bool
	// Snapshot, when not nil, is a snapshot to write (see Snapshot).
	Snapshot *Snapshot
	// SnapshotRefused is set by SnapshotDone when a requested snapshot
	// cannot start: the SKU failed meanwhile. Answer the waiting callers.
	SnapshotRefused error
	// Recover asks the shell to rebuild the Machine from disk now and to
	// report Recovered or RecoveryFailed.
	Recover bool
	// Rank, when not nil, is a lottery ranking to compute off the actor
	// (lottery.go); report it with Ranked.
	Rank *Rank
	// MoreDraw is set while a ranking has records left: tick again at once.
	MoreDraw bool
}

// Advance ends a round: the shell appended the first appended records of
// Ready (all of them when err is nil), and err is the error that stopped it.
// A failed append makes the SKU fail-stop (the error is kept, see Failed)
// and answers every call of the round at once.
//
// Advance panics if appended exceeds the round's records, or if err is nil
// and some records were not appended (a programming error of the shell).
func (c *Core) Advance(appended int, err error) *Actions {
	r := &c.round
	if appended < 0 || appended > len(r.records) || (err == nil && appended != len(r.records)) {
		panic(fmt.Sprintf("core: Advance(%d, %v) after a round of %d records", appended, err, len(r.records)))
	}
	out := &c.output
	*out = Actions{Answer: r.answer}
	c.lastIndex += uint64(appended)
	if err != nil {
		c.fail(r.at, err)
		for _, mk := range r.marks {
			out.Answer = append(out.Answer, mk.call)
			if mk.end <= appended || mk.first < appended {
				Settle([]*Call{mk.call}, err) // it rests on the failed batch
			} else {
				undecided(mk.call) // decided after the failing record: never appended
			}
		}
	} else {
		if len(r.marks) > 0 || appended > 0 {
			c.wait.Index = c.lastIndex
			c.wait.Calls = c.wait.Calls[:0]
			for _, mk := range r.marks {
				c.wait.Calls = append(c.wait.Calls, mk.call)
			}
			out.Wait = &c.wait
		}
		if r.ticked {
			out.Ticked, out.Expired, out.NextExpiry, out.MoreExpiry = true, r.expired, r.next, r.more
		}
	}
	out.Recover = r.recover
	out.MoreDraw = r.moreDraw && err == nil
	ticked, tickAt := r.ticked && err == nil, r.tickAt
	c.endRound()
	c.assertRound()
	if ticked {
		// Once the round is over: the snapshot freezes the state with
		// every record of the round appended.
		out.Snapshot = c.snapshotDue(tickAt)
	}
	if len(c.round.records) == 0 {
		out.Rank = c.rankDue()
	}
	return out
}

// endRound forgets the round, keeping its slices for the next one.
func (c *Core) endRound() {
	r := &c.round
	clear(r.records) // the records hold strings: let them go
	clear(r.marks)
	*r = round{records: r.records[:0], marks: r.marks[:0], answer: c.output.Answer[:0]}
}
