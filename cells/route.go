package cells

import (
	"slices"
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
	// Batch: a batch reserve of a celled SKU, split by cell (SplitBatch).
	Batch bool
	// SKU is the published SKU for FanOut and Batch: its map and its
	// campaign's purchase limit.
	SKU *Published
}

// Routes decides routes from the frozen maps of the published SKUs. It is
// read-only once built, so one value serves every request goroutine.
type Routes struct {
	skus map[string]*Published // by campaign + "/" + sku
}

// NewRoutes builds the routes of the published SKUs.
func NewRoutes(published []Published) *Routes {
	r := &Routes{skus: map[string]*Published{}}
	for i := range published {
		d := published[i].Definition
		r.skus[d.CampaignID+"/"+d.SKUID] = &published[i]
	}
	return r
}

// Decide routes a request of the seckilld HTTP API by its method, path
// and body: a reserve by its user's slot through the SKU's map
// (Published.CellOf: hash(campaign, sku, user_id), or hash(campaign,
// user_id) when the campaign's purchase limit is "campaign"), a batch reserve split by cell, a reservation by the cell its id
// names (reservation), a request_id lookup to every cell of the SKU, anything else to
// the default cell.
func (r *Routes) Decide(method, path string, body []byte) Route {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && (parts[0] == "v1" || parts[0] == "admin") && parts[1] == "reservations":
		return r.reservation(parts[2])
	case len(parts) >= 5 && parts[0] == "v1" && parts[1] == "campaigns" && parts[3] == "skus":
		p := r.skus[parts[2]+"/"+parts[4]]
		if p == nil {
			return Route{}
		}
		if len(parts) == 6 && parts[5] == "reservations" && method == "POST" {
			user := fastjson.GetString(body, "user_id")
			if !sku.ValidID(user) {
				return Route{Cell: p.Map.Cells[0]} // the cell answers 400 for a bad body
			}
			return Route{Cell: p.CellOf(user)}
		}
		if len(parts) == 6 && parts[5] == "reservations:batch" && method == "POST" {
			return Route{Batch: true, SKU: p}
		}
		if len(parts) == 7 && parts[5] == "requests" {
			return Route{FanOut: true, SKU: p}
		}
		return Route{Cell: p.Map.Cells[0]}
	}
	return Route{}
}

// reservation routes a request about reservation id to the cell the id
// names. A celled SKU's map is frozen, so an id naming a cell outside it
// names no reservation (a reservation has one id): it goes to the map's
// first cell, which answers 404 NOT_FOUND as any cell does, rather than to
// a cell the router may have no address for (503 CELL_UNAVAILABLE, which
// a client would retry in vain). An id of a SKU the routes do not hold
// (not celled, or published since they were built) goes to its cell.
func (r *Routes) reservation(id string) Route {
	campaignID, skuID, cell, _, _, err := sku.ParseCellReservationID(id)
	if p := r.skus[campaignID+"/"+skuID]; err == nil && p != nil && cell != "" && !slices.Contains(p.Map.Cells, cell) {
		return Route{Cell: p.Map.Cells[0]}
	}
	return Route{Cell: cell}
}

// SKU returns a celled SKU as published (its frozen map and its
// campaign's purchase limit), nil when the SKU is not celled (or not
// published when the routes were built).
func (r *Routes) SKU(campaignID, skuID string) *Published {
	return r.skus[campaignID+"/"+skuID]
}

// Len returns the number of celled SKUs routed.
func (r *Routes) Len() int { return len(r.skus) }
