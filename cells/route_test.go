package cells

import (
	"testing"

	"github.com/seckill/seckill/actors/sku"
)

// TestRoutes: a reserve goes to the user's cell by the frozen map, a
// reservation to the cell its id names, a request_id lookup to every cell
// of the SKU, the rest (and SKUs that are not celled) to the default cell.
func TestRoutes(t *testing.T) {
	m, err := EvenMap(3, []string{"c1", "c2", "c3"})
	if err != nil {
		t.Fatal(err)
	}
	pub := Published{Definition: sku.Definition{CampaignID: "demo", SKUID: "hot"}, Map: m}
	r := NewRoutes([]Published{pub})
	seen := map[string]bool{}
	for u := range 60 {
		user := "u" + string(rune('a'+u%26)) + string(rune('a'+u/26))
		got := r.Decide("POST", "/v1/campaigns/demo/skus/hot/reservations", []byte(`{"request_id":"r","user_id":"`+user+`"}`))
		if want := pub.CellOf(user); got.Cell != want || got.FanOut {
			t.Fatalf("user %s: %+v, want %s", user, got, want)
		}
		seen[got.Cell] = true
	}
	if len(seen) != 3 {
		t.Fatalf("60 users reached cells %v", seen)
	}
	id := sku.FormatCellReservationID("demo", "hot", "c2", 9, [16]byte{1})
	for _, path := range []string{"/v1/reservations/" + id, "/v1/reservations/" + id + "/payment", "/admin/reservations/" + id + "/release"} {
		if got := r.Decide("POST", path, nil); got.Cell != "c2" {
			t.Fatalf("%s: %+v", path, got)
		}
	}
	if got := r.Decide("GET", "/v1/campaigns/demo/skus/hot/requests/r1", nil); !got.FanOut || got.SKU == nil {
		t.Fatalf("lookup: %+v", got)
	}
	for _, path := range []string{"/v1/campaigns/demo/skus/cold/reservations", "/healthz", "/v1/reservations/demo~cold~1~0123456789abcdef"} {
		if got := r.Decide("POST", path, []byte(`{"user_id":"u1"}`)); got.Cell != "" || got.FanOut {
			t.Fatalf("%s: %+v, want the default cell", path, got)
		}
	}
	if s := Slot(sku.PurchaseLimitSKU, "demo", "hot", "u1"); s < 0 || s >= Slots || s != Slot(sku.PurchaseLimitSKU, "demo", "hot", "u1") {
		t.Fatalf("slot %d", s)
	}
	if _, err := EvenMap(1, []string{"c1", "c1"}); err == nil {
		t.Fatal("a repeated cell accepted")
	}
}

// TestReservationOfACellOutsideTheMap: a celled SKU's reservation id that
// names a cell outside the SKU's frozen map names no reservation (a
// reservation has one id, docs/api.md), so it goes to a cell of the map,
// which answers 404 NOT_FOUND, not to a cell the router may have no
// address for (503 CELL_UNAVAILABLE with Retry-After, which a client
// retries in vain). An id of a SKU the routes do not hold (not celled, or
// published a moment ago) still goes to the cell it names.
func TestReservationOfACellOutsideTheMap(t *testing.T) {
	m, err := EvenMap(1, []string{"c1", "c2"})
	if err != nil {
		t.Fatal(err)
	}
	r := NewRoutes([]Published{{Definition: sku.Definition{CampaignID: "demo", SKUID: "hot"}, Map: m}})
	outside := sku.FormatCellReservationID("demo", "hot", "c9", 9, [16]byte{1})
	for _, path := range []string{"/v1/reservations/" + outside, "/v1/reservations/" + outside + "/cancel", "/admin/reservations/" + outside + "/release"} {
		if got := r.Decide("POST", path, nil); got.Cell != "c1" {
			t.Fatalf("%s: %+v, want the map's first cell", path, got)
		}
	}
	unknown := sku.FormatCellReservationID("demo", "new", "c9", 9, [16]byte{1})
	if got := r.Decide("GET", "/v1/reservations/"+unknown, nil); got.Cell != "c9" {
		t.Fatalf("a SKU the routes do not hold: %+v, want the cell its id names", got)
	}
}
