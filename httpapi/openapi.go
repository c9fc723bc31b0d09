package httpapi

import (
	_ "embed"

	"github.com/valyala/fasthttp"
)

// openAPIDocument is the OpenAPI 3.1 document of every route, kept in the
// repository (httpapi/openapi.json) and served at GET /openapi.json. A
// test checks it against the router (every route documented, nothing
// documented that is not served), validates it against the OpenAPI 3.1
// schema and checks real answers against it: a route added to the router
// must be added here.
//
//go:embed openapi.json
var openAPIDocument []byte

// handleOpenAPI is GET /openapi.json.
func (s *Server) handleOpenAPI(ctx *fasthttp.RequestCtx) string {
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("application/json")
	ctx.Response.Header.Set("Cache-Control", "public, max-age=3600")
	ctx.SetBody(openAPIDocument)
	return outcomeOK
}
