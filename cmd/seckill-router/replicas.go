package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/seckill/seckill/httpapi"
)

// A cell (or a plain node) may be a replica set of seckillds (package
// replica): one primary serves it, its standbys answer 421 NOT_PRIMARY.
// The router follows every set's leader and member keys in etcd
// (replica.Primaries, a watch) and sends a cell's requests to the primary
// of the replica set named by the cell's id; while that set is between
// primaries (its leader key free during a failover) the request is not
// sent (503 CELL_UNAVAILABLE, Retry-After: nothing was delivered). A cell
// no replica set names goes to its --cells address. A 421 NOT_PRIMARY
// (the router's table a moment behind etcd) is retried once at the
// primary it names, and one that names no primary (the replica demoted,
// no primary known) waits for the next primary as a set between primaries
// does; a reserve cut off before any answer is sent again like one not
// delivered (repeat.go), and another request delivered to a primary that
// died before answering is answered 504 RESULT_UNKNOWN with its lookup
// URL (unanswered.go). A 503 UNAVAILABLE with Retry-After (nothing applied:
// a primary defining its campaigns) is sent again after that wait while
// the request has time for it (unavailable.go), and a request not sent
// while the set is between primaries is sent to the next one
// (failover.go).

// newClient is the router's client of one seckilld address.
func (r *router) newClient(addr string) *fasthttp.HostClient {
	return &fasthttp.HostClient{Addr: addr, MaxConns: 4096, ReadTimeout: r.timeout, WriteTimeout: r.timeout,
		MaxIdemponentCallAttempts: 1}
}

// clientAt is the client of a primary's address host:port.
func (r *router) clientAt(addr string) *fasthttp.HostClient {
	if c, ok := r.byAddr.Load(addr); ok {
		return c.(*fasthttp.HostClient)
	}
	c, _ := r.byAddr.LoadOrStore(addr, r.newClient(addr))
	return c.(*fasthttp.HostClient)
}

// client is where cell's requests go now: its replica set's primary, its
// --cells address, or nil (nowhere: a set between primaries, a cell
// without an address).
func (r *router) client(cell string) *fasthttp.HostClient {
	if name, m := r.primaries.Primary(cell); name != "" && m.HTTP != "" {
		return r.clientAt(hostPort(m.HTTP))
	}
	if r.primaries.Known(cell) {
		return nil
	}
	return r.static[cell]
}

// hostPort is the host:port of a base URL.
func hostPort(url string) string {
	return strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(url, "http://"), "https://"), "/")
}

// do sends req to cell and reads its answer into resp, all within the
// router's --timeout: a 503 UNAVAILABLE with Retry-After (nothing was
// applied) is sent again after that wait while the wait leaves the retry
// time enough (retryUnavailable), and a request a replica set between
// primaries was not sent, or a reserve cut off (repeat.go), is sent again
// once the table changes (awaitPrimary, failover.go).
func (r *router) do(cell string, req *fasthttp.Request, resp *fasthttp.Response) error {
	deadline := time.Now().Add(r.timeout)
	held := false
	defer func() { r.releaseWait(held) }()
	for {
		changed := r.primaries.Changed()
		if err := r.attempt(cell, req, resp, deadline); err != nil {
			if r.awaitPrimary(cell, req, err, changed, deadline, &held) {
				resp.Reset()
				continue
			}
			return err
		}
		wait, ok := retryUnavailable(resp, time.Until(deadline), r.timeout)
		if !ok {
			return nil
		}
		time.Sleep(wait)
		resp.Reset()
	}
}

// errNotPrimary: the replica the request went to answered 421
// NOT_PRIMARY and named no other primary to send it to (no primary is
// known: a failover in progress, or etcd not answering). Nothing was
// applied, so it counts as not delivered: the request waits for the set's
// next primary (failover.go), and a buyer gets 503 CELL_UNAVAILABLE, never
// the replica's 421, which names nothing a router's client can use.
var errNotPrimary = errors.New("its replica answered 421 NOT_PRIMARY: the replica set has no primary now")

// attempt sends req to cell's primary once and reads its answer into
// resp; a 421 NOT_PRIMARY that names another address is sent there once
// more (a standby refused it: nothing was applied), and one that names
// none is errNotPrimary. Both sends end by the request's deadline: the
// second gets what the first left, not a whole --timeout more.
func (r *router) attempt(cell string, req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time) error {
	c := r.client(cell)
	if c == nil {
		return errNotDelivered
	}
	if err := c.DoDeadline(req, resp, deadline); err != nil {
		return err
	}
	np, ok := notPrimary(resp)
	if !ok {
		return nil
	}
	if np.Address != "" && hostPort(np.Address) != c.Addr {
		resp.Reset()
		if err := r.clientAt(hostPort(np.Address)).DoDeadline(req, resp, deadline); err != nil {
			return err
		}
		if np, ok = notPrimary(resp); !ok {
			return nil
		}
	}
	if np.Primary != "" {
		return fmt.Errorf("%w (replica set %s: it names %s, which refused it too)", errNotPrimary, np.ReplicaSet, np.Primary)
	}
	return fmt.Errorf("%w (replica set %s)", errNotPrimary, np.ReplicaSet)
}

// notPrimary reads resp when it is a 421 NOT_PRIMARY.
func notPrimary(resp *fasthttp.Response) (httpapi.NotPrimaryAnswer, bool) {
	if resp.StatusCode() != fasthttp.StatusMisdirectedRequest {
		return httpapi.NotPrimaryAnswer{}, false
	}
	return httpapi.ParseNotPrimary(resp.Body())
}
