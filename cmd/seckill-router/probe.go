package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"
)

// A --cells address that answers, but not as a seckilld (a typo naming
// etcd's client port or another service, or a router), would have every
// request of its cell answered by that server: etcd's plain-text "404 page
// not found" to a buyer's reserve, or a router forwarding to itself until
// its timeout. Nothing in one request tells the router so, and the
// operator would see nothing in its log. So the router asks each --cells
// address's GET /healthz at start and logs one that answers otherwise than
// a seckilld does (200, JSON with a "status"). An address that does not
// answer yet (a cell started after its router, as make cluster does) is
// asked again every probeEvery, for up to probeFor.

// probeEvery and probeFor pace and bound the probes of --cells addresses.
const (
	probeEvery = time.Second
	probeFor   = time.Minute
)

// probeCell asks the --cells address c for GET /healthz: answered false
// when it gave no answer, else what is wrong with the answer ("" for a
// seckilld's).
func probeCell(c *fasthttp.HostClient, timeout time.Duration) (problem string, answered bool) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + c.Addr + "/healthz")
	if err := c.DoTimeout(req, resp, timeout); err != nil {
		return "", false
	}
	switch {
	case string(resp.Header.Peek(fasthttp.HeaderServer)) == "seckill-router":
		return "it is a seckill-router, not a seckilld (requests sent there would be routed again)", true
	case resp.StatusCode() != fasthttp.StatusOK || !fastjson.Exists(resp.Body(), "status"):
		body := resp.Body()
		if len(body) > 80 {
			body = body[:80]
		}
		return fmt.Sprintf("GET /healthz answered %d %q (%s), as no seckilld answers", resp.StatusCode(), body, resp.Header.ContentType()), true
	}
	return "", true
}

// probeCells probes every --cells address until each answered once or
// probeFor passed (or ctx ended), logging each that is no seckilld.
func (r *router) probeCells(ctx context.Context, log *slog.Logger) {
	left := map[string]bool{}
	for _, cell := range r.order {
		left[cell] = true
	}
	deadline := time.Now().Add(probeFor)
	for len(left) > 0 && time.Now().Before(deadline) {
		for _, cell := range r.order {
			if !left[cell] {
				continue
			}
			problem, answered := probeCell(r.static[cell], probeEvery)
			if !answered {
				continue
			}
			delete(left, cell)
			if problem != "" {
				log.Warn("a --cells address is not a seckilld: the requests of its cell get that server's answers", "cell", cell,
					"address", r.static[cell].Addr, "problem", problem)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(probeEvery):
		}
	}
}
