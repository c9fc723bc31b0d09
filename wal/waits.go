package wal

import (
	"sync/atomic"
	"time"
)

// Waits are group commit's figures as the waiters see them: how long
// callers wait for their records to become durable. The admission of new
// work reads them (package admission): a caller admitted now waits about
// as long as the last release's oldest waiter did, or longer while the
// oldest waiter still queued has waited longer than that (a commit that
// stalls shows here before it ends).
type Waits struct {
	// Oldest is how long the oldest waiter still queued has waited since
	// Await; 0 while none is queued.
	Oldest time.Duration
	// Last is how long the oldest waiter of the last release had waited
	// when its records became durable and it was released: the
	// commit latency a caller saw, including the commit it queued behind.
	Last time.Duration
	// Releases counts the releases of durable waiters since the Log was
	// opened (one per group commit that released any).
	Releases uint64
}

// waitFigures are the atomics behind Waits, written under Log.mu and read
// without it. Times are nanoseconds since the Log's epoch (Options.Clock).
type waitFigures struct {
	epoch    time.Time
	oldestAt atomic.Int64 // the oldest queued waiter's stamp + 1; 0: none queued
	last     atomic.Int64 // Waits.Last, ns
	releases atomic.Uint64
}

// stamp returns the time now as a waiter stamp.
func (l *Log) stamp() int64 {
	if l.opts.Clock == nil {
		return int64(time.Since(l.waits.epoch)) // monotonic: epoch has the reading
	}
	return int64(l.opts.Clock().Sub(l.waits.epoch))
}

// Waits returns the waiter figures now: atomic loads, and one clock
// reading while a waiter is queued.
func (l *Log) Waits() Waits {
	f := &l.waits
	w := Waits{Last: time.Duration(f.last.Load()), Releases: f.releases.Load()}
	if at := f.oldestAt.Load(); at != 0 {
		w.Oldest = max(0, time.Duration(l.stamp()-(at-1)))
	}
	return w
}

// noteOldestLocked publishes the stamp of the oldest queued waiter after
// the queue changed.
func (l *Log) noteOldestLocked() {
	if l.waiters.empty() {
		l.waits.oldestAt.Store(0)
		return
	}
	l.waits.oldestAt.Store(l.waiters.ring[l.waiters.head].at + 1)
}

// noteReleased records a release of durable waiters, oldest first, at now.
func (l *Log) noteReleased(released []waiter, now int64) {
	l.waits.last.Store(max(0, now-released[0].at))
	l.waits.releases.Add(1)
}
