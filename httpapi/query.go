package httpapi

import (
	"slices"
	"strings"

	"github.com/valyala/fasthttp"
)

// queryParams are the query parameters each route accepts, by route name
// (as openapi.json declares them); every other
// route accepts none. A parameter a route does not accept, or one given
// twice (which one would count?), is 400 BAD_REQUEST naming it, before the
// route runs (route).
var queryParams = map[string][]string{
	"admin_feed":            {"after", "limit", "wait", "types"},
	"admin_campaign_feed":   {"after", "limit", "wait", "types"},
	"admin_stats":           {"skus", "match", "top"},
	"admin_stats_stream":    {"skus", "match", "top"},
	"admin_dashboard_login": {"code"},
}

// badQuery returns the detail of a query the route name does not accept,
// or "".
func badQuery(name string, args *fasthttp.Args) string {
	return queryDetail(args, queryParams[name])
}

// RefuseQueryOrBody answers 400 BAD_REQUEST (or INVALID_JSON) and returns
// true for a request to a route served beside this package's router (a
// replica's own /admin/replica routes) whose query holds a parameter
// other than accepted, or one twice, or whose body holds anything but
// JSON whitespace or {}: the rules of the router's routes (a query;
// the admin actions' body).
func RefuseQueryOrBody(ctx *fasthttp.RequestCtx, accepted ...string) bool {
	if detail := queryDetail(ctx.QueryArgs(), accepted); detail != "" {
		write(ctx, errorReply(reasonBadRequest, detail))
		return true
	}
	if err := decodeNoFields(ctx.PostBody()); err != nil {
		write(ctx, bodyError(err))
		return true
	}
	return false
}

// queryDetail returns the detail of a query holding a parameter other
// than accepted, or one twice; "" when it holds neither.
func queryDetail(args *fasthttp.Args, accepted []string) string {
	if args.Len() == 0 {
		return ""
	}
	var detail string
	seen := make(map[string]bool, args.Len())
	args.VisitAll(func(k, _ []byte) {
		key := string(k)
		switch {
		case detail != "":
		case !slices.Contains(accepted, key):
			detail = "query parameter " + quoteInput(key) + " is not accepted here"
			if len(accepted) > 0 {
				detail += " (accepted: " + strings.Join(accepted, ", ") + ")"
			}
		case seen[key]:
			detail = "query parameter " + quoteInput(key) + " repeated"
		}
		seen[key] = true
	})
	return detail
}
