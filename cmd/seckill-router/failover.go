package main

import (
	"errors"
	"time"

	"github.com/valyala/fasthttp"
)

// A replica set between primaries (its leader key free during a
// failover), or whose primary takes no connection (a process gone, its
// lease not expired yet; or a new primary that still names the old one in
// its 421 NOT_PRIMARY, a moment behind its own takeover), was sent
// nothing. A buyer would only wait and send the request again, so the
// router does: at the table's next change (the watch of the set's keys: a
// leader key freed or taken, a member key), or after failoverPoll when the
// table is already right and only the new primary lags, while the request
// keeps at least half of --timeout for that attempt. A failover takes
// about a lease TTL (docs/ha.md), so within the default timeout most of
// one reaches buyers as a wait rather than an error. Waiting requests are
// bounded (maxFailoverWaits), which also bounds the polls a new primary
// gets from them; beyond the bound, and once the time is spent, the 503
// CELL_UNAVAILABLE with Retry-After goes out as before: nothing was
// delivered.

// maxFailoverWaits bounds the requests waiting for a set's next primary:
// each holds a connection and a goroutine of the router, and sends one
// attempt per failoverPoll at most (10,000 a second in all).
const maxFailoverWaits = 1_000

// failoverPoll is the longest a waiting request goes without an attempt.
const failoverPoll = 100 * time.Millisecond

// awaitPrimary waits, for a request to cell that failed with err, not
// delivered or repeatable (repeat.go), until the primaries table changes
// from what changed was taken from (before the attempt) or failoverPoll
// passes. It reports whether to send again: false for any other request,
// a cell that is no replica set, a request whose deadline leaves less
// than half the timeout, or when maxFailoverWaits other requests wait. A
// request holds its place among them (held) from its first wait until do
// returns (releaseWait).
func (r *router) awaitPrimary(cell string, req *fasthttp.Request, err error, changed <-chan struct{}, deadline time.Time, held *bool) bool {
	if delivered(err) && !repeatable(req, err) || errors.Is(err, fasthttp.ErrNoFreeConns) || !r.primaries.Known(cell) {
		return false // the router's own limit is no failover
	}
	left := time.Until(deadline) - r.timeout/2
	if left <= 0 {
		return false
	}
	if !*held {
		select {
		case r.failoverWaits <- struct{}{}:
			*held = true
		default:
			return false
		}
	}
	t := time.NewTimer(min(left, failoverPoll))
	defer t.Stop()
	select {
	case <-changed:
		return true
	case <-t.C:
		return left > failoverPoll
	}
}

// releaseWait gives back a request's place among the waiting ones.
func (r *router) releaseWait(held bool) {
	if held {
		<-r.failoverWaits
	}
}
