package clustertest

import (
	"fmt"
	"net/http"
	"syscall"
	"testing"
)

// TestSoldOutCellsThroughRouter: a SKU of sale_limit 4 published over two
// cells with 2 units each and nothing central (seckillctl cells publish
// --initial 2 --chunk 1), two real cells and routers over them.
//   - A reserve the router delivered to a cell stopped (SIGSTOP) past the
//     router's --timeout is 504 RESULT_UNKNOWN with its lookup URL, not 503:
//     once the cell runs again the lookup through the router finds the
//     reservation the cell made.
//   - Once all 4 are sold, a user of c2 asked directly at c1 (sold out)
//     gets 421 WRONG_CELL naming c2 and its address, not 409 SOLD_OUT; c1's
//     own users get SOLD_OUT.
//   - Every cell's /admin/stats (the dashboard's figures) says invariant_ok
//     with its grants, as its audit does.
func TestSoldOutCellsThroughRouter(t *testing.T) {
	t.Parallel()
	const camp, skuName = "tiny", "last-units"
	cl := startCluster(t, "c1", "c2")
	cl.publish(t, camp, skuName, 4, 2)
	var routes []string
	for _, c := range cl.cellIDs {
		routes = append(routes, c+"="+cl.addrs[c])
	}
	// A router that gives up on a cell after 1 s (the default is 5 s).
	router := startRouter(t, cl.bins, cl.logDir, cl.etcd.Endpoint, routes, "--timeout", "1s")
	call := caller(t)
	skuPath := "/v1/campaigns/" + camp + "/skus/" + skuName
	waitFor(t, "the router and both cells hold the published SKU", func() bool {
		code, _ := call("GET", router+"/router/campaigns/"+camp+"/skus/"+skuName, "")
		ok := code == 200
		for _, c := range cl.cellIDs {
			code, m := call("GET", "http://"+cl.addrs[c]+"/admin/campaigns/"+camp+"/skus/"+skuName+"/audit", "")
			ok = ok && code == 200 && m["granted"] == 2.0
		}
		return ok
	})

	users := usersOfCells(t, cl.cellIDs, camp, skuName, 3)
	reserve := func(base, requestID, user string) (int, map[string]any) {
		return call("POST", base+skuPath+"/reservations", fmt.Sprintf(`{"request_id":"%s","user_id":"%s"}`, requestID, user))
	}
	for _, u := range []string{users["c1"][0], users["c1"][1], users["c2"][0]} {
		if code, m := reserve(router, "r-"+u, u); code != 202 {
			t.Fatalf("%s through the router: %d %v", u, code, m)
		}
	}

	// c2 stopped: the router delivers the reserve and hears nothing.
	c2 := cl.procs["c2"]
	c2.pause(t)
	last := users["c2"][1]
	code, body := reserve(router, "r-"+last, last)
	c2.signal(syscall.SIGCONT)
	lookup := skuPath + "/requests/r-" + last
	if code != http.StatusGatewayTimeout || body["error"] != "RESULT_UNKNOWN" || body["status_url"] != lookup {
		t.Fatalf("a reserve c2 got while stopped: %d %v, want 504 RESULT_UNKNOWN with status_url %s", code, body, lookup)
	}
	waitFor(t, "the lookup through the router finds the reservation c2 made once it ran again", func() bool {
		code, m := call("GET", router+lookup, "")
		return code == 200 && m["outcome"] == "ACCEPTED"
	})

	// Sold out everywhere: c1's users get SOLD_OUT, c2's 421 at c1.
	if code, m := reserve("http://"+cl.addrs["c1"], "r-"+users["c1"][2], users["c1"][2]); code != 409 || m["error"] != "SOLD_OUT" {
		t.Fatalf("c1's user at sold-out c1: %d %v, want 409 SOLD_OUT", code, m)
	}
	stranger := users["c2"][2]
	waitFor(t, "421 WRONG_CELL naming c2 and its address for c2's user at c1", func() bool {
		code, m := reserve("http://"+cl.addrs["c1"], "r-"+stranger, stranger)
		if code != 421 || m["error"] != "WRONG_CELL" || m["cell"] != "c2" {
			t.Fatalf("c2's user at sold-out c1: %d %v, want 421 WRONG_CELL naming c2", code, m)
		}
		return m["address"] == "http://"+cl.addrs["c2"] // once c1 has read the announced addresses
	})

	for _, c := range cl.cellIDs {
		var row map[string]any
		waitFor(t, c+"'s stats with both units reserved", func() bool {
			_, st := call("GET", "http://"+cl.addrs[c]+"/admin/stats", "")
			rows, _ := st["skus"].([]any)
			for _, r := range rows {
				if r := r.(map[string]any); r["sku_id"] == skuName {
					row = r
				}
			}
			return row != nil && row["reserved"] == 2.0
		})
		if row["invariant_ok"] != true || row["granted"] != 2.0 || row["returned"] != 0.0 || row["available"] != 0.0 || row["cell"] != c {
			t.Errorf("%s's stats row: %v, want invariant_ok with granted 2, returned 0", c, row)
		}
		if code, a := call("GET", "http://"+cl.addrs[c]+"/admin/campaigns/"+camp+"/skus/"+skuName+"/audit", ""); code != 200 || a["invariant_ok"] != true {
			t.Errorf("%s's audit: %d %v", c, code, a)
		}
	}
}
