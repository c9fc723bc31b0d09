package cells

import (
	"strings"

	"github.com/valyala/fastjson"

	"github.com/seckill/seckill/actors/sku"
)

// Route is where the router sends one request.
type Route struct {
	// Cell is the cell to send it to; "" with FanOut: ask every cell of
	// the SKU's map (a request_id lookup: the user is not in the path),
	// "" without: the default cell (a SKU that is not celled, or a route
	// that names no SKU).
	Cell   string
	FanOut bool
	// Batch: a batch reserve of a celled SKU, split by cell (SplitBatch)
	// through Map; Campaign and SKU name the SKU.
	Batch         bool
	Campaign, SKU string
	// Map is the SKU's map for FanOut and Batch (nil: every cell).
	Map *Map
}

// Routes decides routes from the frozen maps of the published SKUs. It is
// read-only once built, so one value serves every request goroutine.
type Routes struct {
	maps map[string]*Map // by campaign + "/" + sku
}

// NewRoutes builds the routes of the published SKUs.
func NewRoutes(published []Published) *Routes {
	r := &Routes{maps: map[string]*Map{}}
	for i := range published {
		d := published[i].Definition
		r.maps[d.CampaignID+"/"+d.SKUID] = &published[i].Map
	}
	return r
}

// Decide routes a request of the seckilld HTTP API by its method, path
// and body: a reserve by hash(campaign, sku, user_id) through the SKU's
// map, a batch reserve split by cell, a reservation by the cell its id
// names, a request_id lookup to every cell of the SKU, anything else to
// the default cell.
func (r *Routes) Decide(method, path string, body []byte) Route {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "v1" && parts[1] == "reservations":
		return Route{Cell: sku.ReservationCell(parts[2])}
	case len(parts) >= 3 && parts[0] == "admin" && parts[1] == "reservations":
		return Route{Cell: sku.ReservationCell(parts[2])}
	case len(parts) >= 5 && parts[0] == "v1" && parts[1] == "campaigns" && parts[3] == "skus":
		m := r.maps[parts[2]+"/"+parts[4]]
		if m == nil {
			return Route{}
		}
		if len(parts) == 6 && parts[5] == "reservations" && method == "POST" {
			user := fastjson.GetString(body, "user_id")
			if !sku.ValidID(user) {
				return Route{Cell: m.Cells[0]} // the cell answers 400 for a bad body
			}
			return Route{Cell: m.CellOf(parts[2], parts[4], user)}
		}
		if len(parts) == 6 && parts[5] == "reservations:batch" && method == "POST" {
			return Route{Batch: true, Campaign: parts[2], SKU: parts[4], Map: m}
		}
		if len(parts) == 7 && parts[5] == "requests" {
			return Route{FanOut: true, Map: m}
		}
		return Route{Cell: m.Cells[0]}
	}
	return Route{}
}

// Map returns the frozen map of a celled SKU, nil when the SKU is not
// celled (or not published when the routes were built).
func (r *Routes) Map(campaignID, skuID string) *Map {
	return r.maps[campaignID+"/"+skuID]
}

// Len returns the number of celled SKUs routed.
func (r *Routes) Len() int { return len(r.maps) }
