package actors

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/seckill/seckill/actors/shell"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/skudir"
	"github.com/seckill/seckill/wal"
)

// processStart anchors monotonic time stamps (sojourn stamps, rates).
var processStart = time.Now()

// monoNow returns monotonic nanoseconds since the process started.
func monoNow() int64 { return int64(time.Since(processStart)) }

// SKU is the handle of one SKU actor: its address and what it publishes for
// the ingress without a message round trip.
type SKU struct {
	campaignID, skuID string
	dir               skudir.Dir
	pid               *actor.PID
	box               *pinnedMailbox // pid's mailbox: drain messages are posted to it directly
	engine            *Engine
	in                inbox // calls waiting for the actor

	// Sojourn stamps (see libraries notes): the sender stamps a call and
	// counts it in the inbox (inbox.items); the actor, on taking a batch,
	// stores the stamp of its newest call in headEnqueuedAt. The age of the
	// oldest waiting call is then now-headEnqueuedAt while the inbox holds
	// items: high by at most one batch's service time.
	headEnqueuedAt atomic.Int64
	processed      atomic.Uint64
	rateBits       atomic.Uint64 // float64 messages/s, EWMA
	unavailable    atomic.Bool
	log            atomic.Pointer[wal.Log] // the open log, for its figures
	requests       atomic.Pointer[requestFilter]
	// tickPending is set while a tick Engine.Tick sent is in the actor's
	// mailbox: Tick sends no other. failPending is set while a logFailure
	// is: the release of the log's waiters sends no other.
	tickPending atomic.Bool
	failPending atomic.Bool
	// mailbox counts the messages waiting in the actor's mailbox, bounded
	// by mailboxMax (mailbox.go); ops are the operators' requests waiting
	// for the actor.
	mailbox atomic.Int64
	ops     ops
	// nextExpiry is the earliest expire_at (Unix ms) of a pending
	// reservation as of the actor's last expiry step (math.MaxInt64: none;
	// 0 until the first step): the tick loop skips idle SKUs with it.
	nextExpiry atomic.Int64
	// activity counts what the SKU did, for the dashboard (stats_activity.go).
	activity activity

	// syncFailed is the SKU's failure once it wraps wal.ErrSyncFailed, kept
	// across the actor's incarnations: a supervisor restart is no restart
	// of the engine, and a new incarnation must not rebuild the SKU from a
	// file the page cache may show records of that the disk lost.
	syncFailed atomic.Pointer[error]

	// incarnation is the SKU's actor from its Started until its Restarting
	// or Stopping: a caller's run of the actor hands it its drain
	// (pinnedMailbox.invoke).
	incarnation atomic.Pointer[skuActor]

	// durable is the view as of the durable index, replaced whole by each
	// release (one pointer store per batch, one load per ingress read).
	durable atomic.Pointer[shell.View]

	ready     chan struct{} // closed after the first recovery
	readyOnce sync.Once
	readyErr  error
}

// Stats is what a SKU publishes. Counts, Definition and Paused describe
// durable state only: the sold-out fast path may trust them.
type Stats struct {
	CampaignID, SKUID string
	// Definition is the durable definition, shared with the SKU's
	// published view and every other reader of it: never written. Not
	// nil (the zero definition before one is durable).
	Definition *sku.Definition
	Counts     sku.Counts
	Paused     bool
	// LotteryDrawing is set while a lottery's draw is being recorded
	// (sku.Machine.DrawPending): sku.CheckLotteryDefine needs it.
	LotteryDrawing bool
	// Unavailable is set while the SKU is recovering, or after its log
	// failed (fail-stop): it answers ErrUnavailable until it recovers from disk again.
	Unavailable bool
	// Queued is the number of calls waiting in the SKU's inbox (its
	// mailbox, in the terms of the metrics).
	Queued int64
	// OldestWait is the age of the oldest waiting call.
	OldestWait time.Duration
	// RatePerSecond is the recent processing rate (EWMA over ~1 s ticks):
	// the consumer_rate of the admission bound.
	RatePerSecond float64
	// CommitWait is the age of the oldest call waiting for its records to
	// be durable, CommitLatency how long the calls released by the log's
	// last group commit waited, Commits the number of those releases since
	// the log was opened (wal.Waits: what admission adds to OldestWait).
	CommitWait, CommitLatency time.Duration
	Commits                   uint64
}

// noDefinition is the Definition of Stats before a definition is durable.
var noDefinition sku.Definition

// CampaignID returns the campaign the SKU belongs to.
func (s *SKU) CampaignID() string { return s.campaignID }

// ID returns the SKU id.
func (s *SKU) ID() string { return s.skuID }

// defined reports whether the SKU's definition is durable, or its first
// recovery is over and left it unavailable (a failed log answers
// ErrUnavailable rather than "unknown").
func (s *SKU) defined() bool {
	if v := s.durable.Load(); v != nil && v.Definition.CampaignID != "" {
		return true
	}
	select {
	case <-s.ready:
		return s.unavailable.Load()
	default:
		return false
	}
}

// Stats returns the published figures: atomic loads, no lock, no message.
func (s *SKU) Stats() Stats {
	st := Stats{
		CampaignID:    s.campaignID,
		SKUID:         s.skuID,
		Definition:    &noDefinition,
		Unavailable:   s.unavailable.Load(),
		Queued:        s.in.items.Load(),
		RatePerSecond: math.Float64frombits(s.rateBits.Load()),
	}
	if st.Queued > 0 {
		if age := monoNow() - s.headEnqueuedAt.Load(); age > 0 {
			st.OldestWait = time.Duration(age)
		}
	}
	if v := s.durable.Load(); v != nil {
		st.Definition, st.Counts, st.Paused, st.LotteryDrawing = v.Definition, v.Counts, v.Paused, v.Drawing
	}
	if l := s.log.Load(); l != nil {
		w := l.Waits()
		st.CommitWait, st.CommitLatency, st.Commits = w.Oldest, w.Last, w.Releases
	}
	return st
}

// MayKnowRequest reports whether the SKU may have decided requestID
// already. False is certain: the ingress may then answer from its fast
// paths (SOLD_OUT, ENDED); true means "ask the actor", which gives a
// repeated request_id its original answer.
func (s *SKU) MayKnowRequest(requestID string) bool {
	f := s.requests.Load()
	return f == nil || f.mayContain(requestID)
}

// WALStats returns the figures of the SKU's log since it was opened
// (batches, records, fsyncs), or zeros while no log is open.
func (s *SKU) WALStats() wal.Stats {
	if l := s.log.Load(); l != nil {
		return l.Stats()
	}
	return wal.Stats{}
}

func (s *SKU) publish(v shell.View) {
	s.durable.Store(&v)
}

// recovered records the outcome of the first recovery and wakes Open.
func (s *SKU) recovered(err error) {
	s.readyOnce.Do(func() {
		s.readyErr = err
		close(s.ready)
	})
}

// taken is called by the actor when it takes n stamped calls (take has
// counted them out of the inbox), the newest stamped lastEnqueuedAt: every
// call still waiting is younger.
func (s *SKU) taken(lastEnqueuedAt int64, n int) {
	s.headEnqueuedAt.Store(lastEnqueuedAt)
	s.processed.Add(uint64(n))
}

// minRate is the smallest rate published (messages/s): an average that
// halves every tick decays below it within ~14 ticks of the last message,
// and is then published as 0.
const minRate = 1e-3

// rateTracker turns the processed counter into an EWMA rate, at the times
// Engine.Tick gives it.
type rateTracker struct {
	lastCount uint64
	lastAt    time.Time
}

func (r *rateTracker) tick(s *SKU, now time.Time) {
	n := s.processed.Load()
	if !r.lastAt.IsZero() && now.After(r.lastAt) {
		inst := float64(n-r.lastCount) / now.Sub(r.lastAt).Seconds()
		old := math.Float64frombits(s.rateBits.Load())
		rate := 0.5*old + 0.5*inst
		if rate < minRate { // an idle SKU reads 0, not 3e-16
			rate = 0
		}
		s.rateBits.Store(math.Float64bits(rate))
	}
	r.lastCount, r.lastAt = n, now
}
