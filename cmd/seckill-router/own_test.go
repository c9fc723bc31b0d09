package main

import (
	"testing"

	"github.com/valyala/fasthttp"
)

// TestOwnRoutesTakeMethodsAsSeckilld: the routes the router answers
// itself serve GET and HEAD, answer OPTIONS 204 and any other method 405
// METHOD_NOT_ALLOWED, both with Allow, as every route of seckilld does;
// a POST is never answered as if it were a GET.
func TestOwnRoutesTakeMethodsAsSeckilld(t *testing.T) {
	r, err := newRouter(options{cells: "c1=" + refusedAddr(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/healthz", "/router/campaigns/demo/skus/sku-1"} {
		for _, c := range []struct {
			method, contentType string
			status              int
			allow, body         string
		}{
			{"GET", "application/json", 0, "", ""},
			{"HEAD", "", 0, "", ""},
			{"OPTIONS", "", 204, "GET, HEAD, OPTIONS", ""},
			{"POST", "application/json", 405, "GET, HEAD, OPTIONS", `{"error":"METHOD_NOT_ALLOWED","detail":"allowed: GET, HEAD, OPTIONS"}`},
			{"DELETE", "application/json", 405, "GET, HEAD, OPTIONS", `{"error":"METHOD_NOT_ALLOWED","detail":"allowed: GET, HEAD, OPTIONS"}`},
		} {
			var ctx fasthttp.RequestCtx
			ctx.Request.Header.SetMethod(c.method)
			ctx.Request.SetRequestURI(path)
			ctx.Request.SetHost("router")
			r.handle(&ctx)
			status := ctx.Response.StatusCode()
			if c.status == 0 { // served: the route's own answer
				if status == 405 || status == 204 {
					t.Fatalf("%s %s: %d, want it served", c.method, path, status)
				}
			} else if status != c.status {
				t.Fatalf("%s %s: %d %s, want %d", c.method, path, status, ctx.Response.Body(), c.status)
			}
			if got := string(ctx.Response.Header.Peek("Allow")); got != c.allow {
				t.Fatalf("%s %s: Allow %q, want %q", c.method, path, got, c.allow)
			}
			if c.contentType != "" && string(ctx.Response.Header.ContentType()) != c.contentType {
				t.Fatalf("%s %s: Content-Type %q, want %q", c.method, path, ctx.Response.Header.ContentType(), c.contentType)
			}
			if c.body != "" && string(ctx.Response.Body()) != c.body {
				t.Fatalf("%s %s: %s, want %s", c.method, path, ctx.Response.Body(), c.body)
			}
		}
	}
}
