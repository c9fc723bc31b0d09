package clustertest

import (
	"fmt"
	"strings"
	"testing"
)

// TestLookupOfARequestIDTwoUsersUsed: users of two cells reserve through
// the router with the same request_id (each cell accepts its own user's
// reserve: REQUEST_ID_REUSED is caught only within a cell). The lookup of
// that request_id through the router never answers either user's
// reservation: it is 422 REQUEST_ID_REUSED naming both cells, and each
// user gets their own reservation again by resending their reserve. A
// request_id one cell holds is answered by that cell; one no cell holds
// is 404.
func TestLookupOfARequestIDTwoUsersUsed(t *testing.T) {
	const camp, skuName = "lookup", "sku-1"
	cl := startCluster(t, "c1", "c2")
	cl.publish(t, camp, skuName, 10, 5)
	call := caller(t)
	waitFor(t, "the router holds the published SKU", func() bool {
		code, _ := call("GET", cl.router+"/router/campaigns/"+camp+"/skus/"+skuName, "")
		return code == 200
	})
	// Each cell's first user reserves with the shared request_id; c2's
	// second, later, with a request_id of its own.
	users := usersOfCells(t, cl.cellIDs, camp, skuName, 2)
	skuPath := cl.router + "/v1/campaigns/" + camp + "/skus/" + skuName
	reservationOf := map[string]any{}
	for _, cell := range []string{"c1", "c2"} {
		var code int
		var body map[string]any
		waitFor(t, "a reserve of "+cell+"'s user is accepted", func() bool {
			code, body = call("POST", skuPath+"/reservations", `{"request_id":"shared","user_id":"`+users[cell][0]+`"}`)
			return code == 202
		})
		reservationOf[cell] = body["reservation_id"]
	}
	code, body := call("GET", skuPath+"/requests/shared", "")
	if code != 422 || body["error"] != "REQUEST_ID_REUSED" || !strings.Contains(fmt.Sprint(body["detail"]), "c1, c2") ||
		body["reservation_id"] != nil || body["reservation"] != nil {
		t.Fatalf("lookup of a request_id both cells hold: %d %v, want 422 REQUEST_ID_REUSED naming c1, c2 and no reservation", code, body)
	}
	for _, cell := range []string{"c1", "c2"} {
		code, body := call("POST", skuPath+"/reservations", `{"request_id":"shared","user_id":"`+users[cell][0]+`"}`)
		if code != 202 || body["reservation_id"] != reservationOf[cell] {
			t.Fatalf("%s's user resending: %d %v, want 202 with %v", cell, code, body, reservationOf[cell])
		}
	}
	one := users["c2"][1]
	if code, body := call("POST", skuPath+"/reservations", `{"request_id":"one","user_id":"`+one+`"}`); code != 202 {
		t.Fatalf("a reserve of c2's user %s: %d %v", one, code, body)
	}
	if code, body := call("GET", skuPath+"/requests/one", ""); code != 200 || body["outcome"] != "ACCEPTED" || body["reservation"].(map[string]any)["user_id"] != one {
		t.Fatalf("lookup of a request_id c2 alone holds: %d %v, want 200 ACCEPTED of %s", code, body, one)
	}
	if code, body := call("GET", skuPath+"/requests/none", ""); code != 404 || body["error"] != "NOT_FOUND" {
		t.Fatalf("lookup of a request_id no cell holds: %d %v, want 404 NOT_FOUND", code, body)
	}
}
