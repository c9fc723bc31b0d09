package httpapi

import (
	"bytes"
	"sync"
	"sync/atomic"

	"github.com/seckill/seckill/actors/sku"
	"github.com/valyala/fasthttp"
)

// The reserve route without the router's allocations: fasthttp/router
// copies each path parameter into a new string and boxes it for the
// request's user values, four to five allocations per reserve (about a
// third of a hot reserve's, half of a fast-path SOLD_OUT's). A POST whose
// raw path is exactly /v1/campaigns/{c}/skus/{s}/reservations for ids of a
// SKU the engine knows is matched here instead, and its user values are
// set from strings interned (and boxed) once per SKU; every other request,
// a percent-encoded path included, goes through the router as before.

// maxInterned bounds the interned ids (campaign and SKU ids of known
// SKUs): beyond it, reserves of further SKUs take the router's path.
const maxInterned = 4096

// idIntern holds the ids of known SKUs, each boxed once as the any the
// request's user values take. Readers load an immutable map; a writer
// copies it (rarely: once per new SKU seen, at most maxInterned ids).
type idIntern struct {
	m  atomic.Pointer[map[string]any]
	mu sync.Mutex
}

// get returns the boxed id, without allocating.
func (in *idIntern) get(id []byte) (any, bool) {
	m := in.m.Load()
	if m == nil {
		return nil, false
	}
	v, ok := (*m)[string(id)]
	return v, ok
}

// full reports whether no more ids are interned.
func (in *idIntern) full() bool {
	m := in.m.Load()
	return m != nil && len(*m) >= maxInterned
}

// add interns ids (while there is room).
func (in *idIntern) add(ids ...string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	old := in.m.Load()
	next := make(map[string]any, 8)
	if old != nil {
		next = make(map[string]any, len(*old)+len(ids))
		for k, v := range *old {
			next[k] = v
		}
	}
	for _, id := range ids {
		if _, ok := next[id]; !ok && len(next) < maxInterned {
			next[id] = any(id)
		}
	}
	in.m.Store(&next)
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

// reserveRoute returns a handler that serves reserves of known SKUs with
// reserve directly and passes every other request to routed (the router).
// It recovers a panic as the router's PanicHandler would.
func (s *Server) reserveRoute(reserve, routed fasthttp.RequestHandler) fasthttp.RequestHandler {
	var ids idIntern
	return func(ctx *fasthttp.RequestCtx) {
		if !ctx.IsPost() {
			routed(ctx)
			return
		}
		c, k, shaped := reservePath(ctx.Request.URI().PathOriginal())
		if !shaped {
			routed(ctx)
			return
		}
		cv, okc := ids.get(c)
		kv, okk := ids.get(k)
		if !okc || !okk {
			campaignID, skuID := string(c), string(k)
			if ids.full() || !sku.ValidID(campaignID) || !sku.ValidID(skuID) {
				routed(ctx)
				return
			}
			if _, known := s.engine.SKUStats(campaignID, skuID); !known {
				routed(ctx)
				return
			}
			ids.add(campaignID, skuID)
			if cv, okc = ids.get(c); !okc {
				routed(ctx)
				return
			}
			if kv, okk = ids.get(k); !okk {
				routed(ctx)
				return
			}
		}
		defer func() {
			if v := recover(); v != nil {
				s.recoverPanic(ctx, v)
			}
		}()
		ctx.SetUserValue("campaign_id", cv)
		ctx.SetUserValue("sku_id", kv)
		reserve(ctx)
	}
}
