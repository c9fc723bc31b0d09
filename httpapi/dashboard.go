package httpapi

import (
	"path"

	"github.com/seckill/seckill/httpapi/dashboard"
	"github.com/valyala/fasthttp"
)

// The dashboard page (package dashboard): GET /admin/dashboard and its two
// assets. They hold no data and need no token (a browser cannot send one
// on navigation); the page reads /admin/stats/stream with the session
// cookie a login link set (dashboard_login.go), or asks for the admin
// token once, keeps it in the tab's sessionStorage, never in a URL, and
// sends it as a bearer token.

// dashboardCSP allows the page its own script, style and connections to
// the server, and nothing else (no inline script, no other host, no
// framing).
const dashboardCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// dashboardAssets maps a route to its embedded file and content type.
var dashboardAssets = map[string]struct{ file, contentType string }{
	"/admin/dashboard":         {"index.html", "text/html; charset=utf-8"},
	"/admin/dashboard/app.js":  {"app.js", "text/javascript; charset=utf-8"},
	"/admin/dashboard/app.css": {"app.css", "text/css; charset=utf-8"},
}

// dashboardRoutes registers the page's routes with get.
func (s *Server) dashboardRoutes(get func(path string, h fasthttp.RequestHandler)) {
	for route, a := range dashboardAssets {
		body, err := dashboard.Files.ReadFile(a.file)
		if err != nil {
			panic("httpapi: dashboard asset missing: " + err.Error()) // a build defect
		}
		contentType := a.contentType
		get(route, s.route("admin_dashboard_"+path.Ext(a.file)[1:], func(ctx *fasthttp.RequestCtx) string {
			h := &ctx.Response.Header
			h.Set("Content-Security-Policy", dashboardCSP)
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Referrer-Policy", "no-referrer")
			h.Set("Cache-Control", "no-cache")
			ctx.SetContentType(contentType)
			ctx.SetBody(body)
			return outcomeOK
		}))
	}
}
