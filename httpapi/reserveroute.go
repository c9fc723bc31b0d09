package httpapi

import (
	"bytes"
	"sync"
	"sync/atomic"

	"github.com/seckill/seckill/actors/sku"
	"github.com/valyala/fasthttp"
)

// The reserve route without the router: fasthttp/router copies each path
// parameter into a new string and boxes it for the request's user values,
// four to five allocations per reserve, and the handler then reads them
// back and checks them (sku.ValidID) twice, and looks the SKU's ingress
// counters up by its ids. A POST whose raw path is exactly
// /v1/campaigns/{c}/skus/{s}/reservations of a SKU the engine knows is
// matched here instead, by one lookup of the raw path in a table of known
// SKUs, which gives the ids (checked once, when the SKU entered the table)
// and the SKU's ingress counters; every other request, a percent-encoded
// path included, goes through the router as before.

// maxKnownPaths bounds the reserve paths of the table: beyond it, reserves
// of further SKUs take the router's path.
const maxKnownPaths = 4096

// reserveTarget is the SKU of a reserve: its ids and, for a SKU of the
// route's table (a SKU the engine knows), its ingress counters and its
// gate, made once; nil ones are looked up (a routed reserve).
type reserveTarget struct {
	path              string // the raw reserve path, for a SKU of the table
	campaignID, skuID string
	counters          *ingressCounters // the dashboard's (stats_ingress.go)
	gate              *gate            // its permits (admission.go)
}

// pathTable maps the raw reserve path of a known SKU to it. Readers load
// an immutable map; a writer copies it (rarely: once per new SKU seen, at
// most maxKnownPaths entries). The SKU found last is tried first: a flood
// is mostly of one SKU, and comparing its path costs a fraction of hashing
// it for the map.
type pathTable struct {
	m    atomic.Pointer[map[string]*reserveTarget]
	last atomic.Pointer[reserveTarget]
	mu   sync.Mutex
}

// get returns the SKU of a raw reserve path, without allocating.
func (t *pathTable) get(path []byte) (*reserveTarget, bool) {
	if k := t.last.Load(); k != nil && k.path == string(path) {
		return k, true
	}
	m := t.m.Load()
	if m == nil {
		return nil, false
	}
	k, ok := (*m)[string(path)]
	if ok {
		t.last.Store(k)
	}
	return k, ok
}

// full reports whether no more paths are added.
func (t *pathTable) full() bool {
	m := t.m.Load()
	return m != nil && len(*m) >= maxKnownPaths
}

// add enters k under path (while there is room).
func (t *pathTable) add(path string, k *reserveTarget) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.m.Load()
	next := make(map[string]*reserveTarget, 8)
	if old != nil {
		next = make(map[string]*reserveTarget, len(*old)+1)
		for p, v := range *old {
			next[p] = v
		}
	}
	if _, ok := next[path]; !ok && len(next) < maxKnownPaths {
		next[path] = k
	}
	t.m.Store(&next)
}

// reservePath splits a raw path of the shape
// /v1/campaigns/{c}/skus/{s}/reservations into its two ids.
func reservePath(path []byte) (campaignID, skuID []byte, ok bool) {
	rest, ok := bytes.CutPrefix(path, []byte("/v1/campaigns/"))
	if !ok {
		return nil, nil, false
	}
	campaignID, rest, ok = bytes.Cut(rest, []byte("/"))
	if !ok {
		return nil, nil, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte("skus/")); !ok {
		return nil, nil, false
	}
	skuID, rest, ok = bytes.Cut(rest, []byte("/"))
	if !ok || string(rest) != "reservations" {
		return nil, nil, false
	}
	return campaignID, skuID, true
}

// reserveRoute returns a handler that serves reserves of known SKUs
// itself (timedReserve, with the route metrics m) and passes every other
// request to routed (the router). It recovers a panic as the router's
// PanicHandler would.
func (s *Server) reserveRoute(m *routeMetrics, routed fasthttp.RequestHandler) fasthttp.RequestHandler {
	var known pathTable
	return func(ctx *fasthttp.RequestCtx) {
		if !ctx.IsPost() {
			routed(ctx)
			return
		}
		path := ctx.Request.URI().PathOriginal()
		k, ok := known.get(path)
		if !ok {
			if k = s.learnReservePath(&known, path); k == nil {
				routed(ctx)
				return
			}
		}
		defer func() {
			if v := recover(); v != nil {
				s.panicked(ctx, m.route, v)
			}
		}()
		s.timedReserve(ctx, m, k, true)
	}
}

// learnReservePath enters a reserve path of a SKU the engine knows into
// known and returns it; nil for any other path (or a full table).
func (s *Server) learnReservePath(known *pathTable, path []byte) *reserveTarget {
	c, k, shaped := reservePath(path)
	if !shaped || known.full() {
		return nil
	}
	campaignID, skuID := string(c), string(k)
	if !sku.ValidID(campaignID) || !sku.ValidID(skuID) {
		return nil
	}
	counters := s.ingress.of(campaignID, skuID) // nil unless the engine knows the SKU
	if counters == nil {
		return nil
	}
	entry := &reserveTarget{path: string(path), campaignID: campaignID, skuID: skuID, counters: counters, gate: s.gates.get(campaignID, skuID)}
	known.add(entry.path, entry)
	return entry
}
