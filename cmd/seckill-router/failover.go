package main

import (
	"errors"
	"time"

	"github.com/valyala/fasthttp"
)

// A replica set between primaries (its leader key free during a
// failover), or whose primary in the router's table takes no connection
// (a process gone, its lease not expired yet), was sent nothing. A buyer
// would only wait and send the request again, so the router waits for
// the table's next change (the watch of the set's keys: a leader key
// freed or taken, a member key) and sends it again, while the request
// keeps at least half of --timeout for that attempt: a failover takes
// about a lease TTL (docs/ha.md), so within the default timeout most of
// one reaches buyers as a wait rather than an error. Waiting requests are
// bounded (maxFailoverWaits); beyond the bound, and once the time is
// spent, the 503 CELL_UNAVAILABLE with Retry-After goes out as before:
// nothing was delivered.

// maxFailoverWaits bounds the requests waiting for a set's next primary:
// each holds a connection and a goroutine of the router.
const maxFailoverWaits = 10_000

// awaitPrimary waits, for a request to cell that err says was not
// delivered, for the primaries table to change from what changed was
// taken from (before the attempt). It reports whether to send again:
// false for a cell that is no replica set, a request whose deadline
// leaves less than half the timeout, or when maxFailoverWaits wait.
func (r *router) awaitPrimary(cell string, err error, changed <-chan struct{}, deadline time.Time) bool {
	if delivered(err) || errors.Is(err, fasthttp.ErrNoFreeConns) || !r.primaries.Known(cell) {
		return false // the router's own limit is no failover
	}
	left := time.Until(deadline) - r.timeout/2
	if left <= 0 {
		return false
	}
	select {
	case r.failoverWaits <- struct{}{}:
	default:
		return false
	}
	defer func() { <-r.failoverWaits }()
	t := time.NewTimer(left)
	defer t.Stop()
	select {
	case <-changed:
		return true
	case <-t.C:
		return false
	}
}
