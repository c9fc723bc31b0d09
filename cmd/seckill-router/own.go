package main

import (
	"github.com/valyala/fasthttp"

	"github.com/seckill/seckill/httpapi"
)

// The router answers two routes itself, GET /healthz and GET
// /router/campaigns/{c}/skus/{s}, and they take methods as seckilld's
// routes do (docs/api.md, Conventions): GET and HEAD are served, OPTIONS
// is 204 with Allow, any other method 405 METHOD_NOT_ALLOWED with the
// same Allow, so a client or probe that works against a cell works
// against the router.

// ownAllow is the Allow header of the router's own routes.
const ownAllow = "GET, HEAD, OPTIONS"

// ownMethod reports whether ctx's method is one the router's own routes
// serve; when it is not, ctx holds the answer.
func ownMethod(ctx *fasthttp.RequestCtx) bool {
	switch string(ctx.Method()) {
	case fasthttp.MethodGet, fasthttp.MethodHead:
		return true
	case fasthttp.MethodOptions:
		ctx.Response.Header.Set("Allow", ownAllow)
		ctx.SetStatusCode(fasthttp.StatusNoContent)
		return false
	}
	ctx.Response.Header.Set("Allow", ownAllow)
	ctx.SetStatusCode(httpapi.StatusOf(httpapi.ReasonMethodNotAllowed))
	ctx.SetContentType("application/json")
	ctx.SetBodyString(`{"error":"` + httpapi.ReasonMethodNotAllowed + `","detail":"allowed: ` + ownAllow + `"}`)
	return false
}
