package actors

import (
	"math"
	"os"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/wal"
)

// Activity is what one SKU did since this process started it: cumulative
// counters, for the operator's dashboard (httpapi's /admin/stats turns two
// readings into rates). Unlike Stats it is not read on the request path,
// so it may grow. Counters restart at zero with the process; the durable
// figures (counts, reservations by state) are in Stats.
type Activity struct {
	CampaignID, SKUID string
	// Reserve answers the SKU actor decided, by outcome (duplicates of a
	// request_id included: they are answers too). SoldOut is the actor's
	// SOLD_OUT, not the ingress's fast path.
	Accepted, SoldOut, AlreadyPurchased uint64
	// Expired counts the reservations the expiry timer closed.
	Expired uint64
	// Batches and Records are the log's group commits and the records in
	// them; Fsync is the distribution of their fsync durations.
	Batches, Records uint64
	Fsync            HistogramCounts
	// DurableIndex and LastIndex are the log's durable and last record
	// index (0 while no log is open).
	DurableIndex, LastIndex uint64
	// SnapshotAt is when the SKU's newest snapshot was written: by this
	// process, or the one its recovery started from (its file's
	// modification time); zero: none. SnapshotIndex is the log index it
	// covers.
	SnapshotAt    time.Time
	SnapshotIndex uint64
	// EarliestExpireAt is the earliest expire_at (Unix ms) of a
	// PENDING_PAYMENT reservation as of the SKU's last expiry step; 0 when
	// none is pending or no step ran yet. The oldest unpaid reservation was
	// made at EarliestExpireAt - payment window.
	EarliestExpireAt int64
}

// activity is the SKU's side of Activity: atomics, each written by one
// goroutine (the actor, or the log's flusher) and read by any.
type activity struct {
	accepted, soldOut, alreadyPurchased atomic.Uint64
	expired                             atomic.Uint64
	batches, records                    atomic.Uint64
	fsync                               Histogram
	snapshotAtMs                        atomic.Int64 // Unix ms; 0: none
	snapshotIndex                       atomic.Uint64
}

// decided counts the answer the core gave a call (the actor, right after
// Decide; a few atomic adds on reserves, one per item of a batch reserve,
// nothing on other kinds).
func (a *activity) decided(kind core.Kind, c *core.Call) {
	if kind == core.KindReserveBatch && c.Err == nil {
		for i := range c.Items {
			a.decided(core.KindReserve, &c.Items[i])
		}
		return
	}
	if kind != core.KindReserve || c.Err != nil {
		return
	}
	switch c.Result.Outcome {
	case sku.OutcomeAccepted:
		a.accepted.Add(1)
	case sku.OutcomeSoldOut:
		a.soldOut.Add(1)
	case sku.OutcomeAlreadyPurchased:
		a.alreadyPurchased.Add(1)
	}
}

// snapshotWritten records a snapshot written at index.
func (a *activity) snapshotWritten(at time.Time, index uint64) {
	a.snapshotIndex.Store(index)
	a.snapshotAtMs.Store(at.UnixMilli())
}

// snapshotLoaded records the snapshot recovery started from, as written
// when its file was last modified (a failed stat leaves the figure as it
// was: it is only shown).
func (a *activity) snapshotLoaded(path string, index uint64) {
	if st, err := os.Stat(path); err == nil {
		a.snapshotWritten(st.ModTime(), index)
	}
}

// logObserver is the wal.Observer of one SKU's log: the engine's metrics,
// and the SKU's own batch figures.
type logObserver struct {
	engine *engineMetrics
	act    *activity
}

// Committed implements wal.Observer.
func (o logObserver) Committed(records int, fsync time.Duration) {
	o.engine.Committed(records, fsync)
	o.act.batches.Add(1)
	o.act.records.Add(uint64(records))
	if fsync > 0 {
		o.act.fsync.Observe(fsync)
	}
}

// walOptions are the options of the SKU's log: the engine's, observed
// for the SKU too.
func (s *SKU) walOptions(c *Config) wal.Options {
	o := c.walOptions()
	o.Observer = logObserver{engine: c.metrics, act: &s.activity}
	if c.Replication != nil {
		o = c.Replication.LogOptions(s.campaignID, s.skuID, o)
	}
	return o
}

// Activity returns what the SKU did since the process started it.
func (s *SKU) Activity() Activity {
	a := &s.activity
	out := Activity{
		CampaignID:       s.campaignID,
		SKUID:            s.skuID,
		Accepted:         a.accepted.Load(),
		SoldOut:          a.soldOut.Load(),
		AlreadyPurchased: a.alreadyPurchased.Load(),
		Expired:          a.expired.Load(),
		Batches:          a.batches.Load(),
		Records:          a.records.Load(),
		Fsync:            a.fsync.Snapshot(),
		SnapshotIndex:    a.snapshotIndex.Load(),
	}
	if ms := a.snapshotAtMs.Load(); ms != 0 {
		out.SnapshotAt = time.UnixMilli(ms)
	}
	if l := s.log.Load(); l != nil {
		out.DurableIndex, out.LastIndex = l.DurableIndex(), l.LastIndex()
	}
	if next := s.nextExpiry.Load(); next > 0 && next != math.MaxInt64 {
		out.EarliestExpireAt = next
	}
	return out
}

// AllActivity returns the Activity of every defined SKU, sorted by
// campaign and SKU id (the order of AllStats).
func (e *Engine) AllActivity() []Activity {
	hs := e.SKUs()
	out := make([]Activity, 0, len(hs))
	for _, h := range hs {
		if h.defined() {
			out = append(out, h.Activity())
		}
	}
	return out
}
