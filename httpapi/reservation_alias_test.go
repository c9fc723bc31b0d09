package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// A reservation id names one reservation: the same SKU, sequence number
// and tag with a cell the SKU does not have (here any cell: the SKU is not
// celled) names none, so reading, paying or cancelling it is 404
// NOT_FOUND. (It was the reservation itself: a pay answered 200 PAID
// under an id that no reservation has and that GET renders as another.)
func TestReservationIDWithAnotherCellNamesNone(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	ts.define(campaign("alias", "15m", map[string]int{"sku-1": 10}))
	r := ts.reserve("alias", "sku-1", "req-1", "alice")
	want(t, r, http.StatusAccepted, "")
	id := r.str("reservation_id")
	parts := strings.Split(id, "~")
	if len(parts) != 4 {
		t.Fatalf("reservation id %q: want four parts", id)
	}
	alias := strings.Join([]string{parts[0], parts[1], "cell-x", parts[2], parts[3]}, "~")

	want(t, ts.get("/v1/reservations/"+alias), http.StatusNotFound, "NOT_FOUND")
	want(t, ts.post("/v1/reservations/"+alias+"/payment", map[string]any{"payment_id": "pay-1"}), http.StatusNotFound, "NOT_FOUND")
	want(t, ts.post("/v1/reservations/"+alias+"/cancel", nil), http.StatusNotFound, "NOT_FOUND")

	g := ts.get("/v1/reservations/" + id)
	if g.status != http.StatusOK || g.str("state") != "PENDING_PAYMENT" {
		t.Fatalf("the reservation after its alias was paid and cancelled: %v", g)
	}
}
