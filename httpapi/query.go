package httpapi

import (
	"slices"
	"strconv"
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
	if args.Len() == 0 {
		return ""
	}
	accepted := queryParams[name]
	var detail string
	seen := make(map[string]bool, args.Len())
	args.VisitAll(func(k, _ []byte) {
		key := string(k)
		switch {
		case detail != "":
		case !slices.Contains(accepted, key):
			detail = "query parameter " + strconv.Quote(key) + " is not accepted here"
			if len(accepted) > 0 {
				detail += " (accepted: " + strings.Join(accepted, ", ") + ")"
			}
		case seen[key]:
			detail = "query parameter " + strconv.Quote(key) + " repeated"
		}
		seen[key] = true
	})
	return detail
}
