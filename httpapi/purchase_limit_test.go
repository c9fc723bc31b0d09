package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// scopedCampaign is a campaign of n SKUs (s1..sn) with purchase_limit
// "campaign".
func scopedCampaign(id string, n, limit int) map[string]any {
	skus := map[string]int{}
	for i := 1; i <= n; i++ {
		skus[fmt.Sprintf("s%d", i)] = limit
	}
	c := campaign(id, "15m", skus)
	c["purchase_limit"] = "campaign"
	return c
}

// campaignAudit returns GET /admin/campaigns/{c}/audit, checked.
func (ts *testServer) campaignAudit(campaignID string) response {
	ts.t.Helper()
	r := ts.admin(http.MethodGet, "/admin/campaigns/"+campaignID+"/audit", nil)
	if r.status != http.StatusOK || r.body["invariant_ok"] != true {
		ts.t.Fatalf("campaign audit: %v", r)
	}
	return r
}

// livePurchases sums the PENDING_PAYMENT and PAID reservations over a
// campaign audit's SKUs.
func livePurchases(r response) int {
	n := 0
	for _, s := range r.body["skus"].([]any) {
		states := s.(map[string]any)["states"].(map[string]any)
		n += int(states["PENDING_PAYMENT"].(float64) + states["PAID"].(float64))
	}
	return n
}

// The definition's rules, a cross-SKU ALREADY_PURCHASED naming the other
// SKU, buying again after a cancel, and the campaign audit.
func TestPurchaseLimitCampaign(t *testing.T) {
	ts := startServer(t, serverOptions{})
	for _, value := range []any{"user", "", nil} { // only an absent purchase_limit means "sku"
		bad := scopedCampaign("pl", 2, 10)
		bad["purchase_limit"] = value
		r := ts.admin(http.MethodPut, "/admin/campaigns/pl", bad)
		want(t, r, http.StatusBadRequest, "BAD_REQUEST")
		if r.str("detail") != `purchase_limit: must be "sku" or "campaign"` {
			t.Fatalf("purchase_limit %#v: detail %v", value, r)
		}
	}
	// A lottery SKU in a campaign-scope campaign: its entries hold
	// their users like purchases.
	lot, _ := lotteryCampaign(time.Now(), 5, 3)
	lot["purchase_limit"] = "campaign"
	lot["skus"] = append(lot["skus"].([]map[string]any), map[string]any{"sku_id": "plain", "sale_limit": 10})
	ts.define(lot)
	const entries = "/v1/campaigns/lc/skus/ls/entries"
	want(t, ts.post(entries, map[string]string{"request_id": "e1", "user_id": "carol"}), http.StatusAccepted, "")
	r := ts.reserve("lc", "plain", "p1", "carol")
	want(t, r, http.StatusConflict, "ALREADY_ENTERED")
	if r.str("sku_id") != "ls" || r.str("status_url") != "/v1/campaigns/lc/skus/ls/entries/e1" {
		t.Fatalf("reserve while entered: %v", r)
	}
	bought := ts.reserve("lc", "plain", "p2", "dave")
	want(t, bought, http.StatusAccepted, "")
	r = ts.post(entries, map[string]string{"request_id": "e2", "user_id": "dave"})
	want(t, r, http.StatusConflict, "ALREADY_PURCHASED")
	if r.str("reservation_id") != bought.str("reservation_id") || r.str("sku_id") != "plain" {
		t.Fatalf("entry of a buyer: %v", r)
	}
	want(t, ts.get(entries+"/e2"), http.StatusNotFound, "") // not recorded
	// The SKU's own kind of sale answers first: a reserve on the
	// lottery, an entry on the plain SKU.
	want(t, ts.reserve("lc", "ls", "p3", "dave"), http.StatusConflict, "LOTTERY_SALE")
	want(t, ts.post("/v1/campaigns/lc/skus/plain/entries", map[string]string{"request_id": "e3", "user_id": "carol"}),
		http.StatusConflict, "NOT_LOTTERY")

	ts.define(scopedCampaign("pl", 2, 10))
	if got := ts.admin(http.MethodGet, "/admin/campaigns/pl", nil).str("purchase_limit"); got != "campaign" {
		t.Fatalf("read back purchase_limit %q", got)
	}
	changed := scopedCampaign("pl", 2, 10)
	changed["purchase_limit"] = "sku"
	want(t, ts.admin(http.MethodPut, "/admin/campaigns/pl", changed), http.StatusConflict, "DEFINITION_CONFLICT")
	delete(changed, "purchase_limit") // left out: "sku", a change too
	r = ts.admin(http.MethodPut, "/admin/campaigns/pl", changed)
	want(t, r, http.StatusConflict, "DEFINITION_CONFLICT")
	if !strings.Contains(r.str("detail"), `repeat "purchase_limit":"campaign"`) {
		t.Fatalf("a redefinition that leaves purchase_limit out: %v", r)
	}
	added := campaign("pl", "15m", map[string]int{"s3": 10}) // a new SKU without the scope
	added["start_at"], added["end_at"] = changed["start_at"], changed["end_at"]
	want(t, ts.admin(http.MethodPut, "/admin/campaigns/pl", added), http.StatusConflict, "DEFINITION_CONFLICT")

	first := ts.reserve("pl", "s1", "r1", "alice")
	want(t, first, http.StatusAccepted, "")
	other := ts.reserve("pl", "s2", "r2", "alice")
	want(t, other, http.StatusConflict, "ALREADY_PURCHASED")
	if other.str("reservation_id") != first.str("reservation_id") || other.str("sku_id") != "s1" {
		t.Fatalf("cross-SKU refusal: %v, first %v", other, first)
	}
	// Not recorded: the request_id has no durable answer on s2.
	want(t, ts.get("/v1/campaigns/pl/skus/s2/requests/r2"), http.StatusNotFound, "")
	want(t, ts.post("/v1/reservations/"+first.str("reservation_id")+"/cancel", nil), http.StatusOK, "")
	// The same request_id may now be accepted: the refusal decided nothing.
	want(t, ts.reserve("pl", "s2", "r2", "alice"), http.StatusAccepted, "")
	want(t, ts.reserve("pl", "s1", "r3", "alice"), http.StatusConflict, "ALREADY_PURCHASED")
	a := ts.campaignAudit("pl")
	if a.str("purchase_limit") != "campaign" || num(a, "live_users") != 1 || livePurchases(a) != 1 {
		t.Fatalf("campaign audit: %v", a)
	}
	// A SKU-scope campaign is unchanged: one purchase per SKU.
	ts.define(campaign("free", "15m", map[string]int{"a": 5, "b": 5}))
	want(t, ts.reserve("free", "a", "f1", "alice"), http.StatusAccepted, "")
	want(t, ts.reserve("free", "b", "f2", "alice"), http.StatusAccepted, "")
	if a := ts.campaignAudit("free"); a.str("purchase_limit") != "sku" || num(a, "live_users") != 1 || livePurchases(a) != 2 {
		t.Fatalf("SKU-scope campaign audit: %v", a)
	}
}

// Two SKUs, 64 clients of one user clicking both at once: one 202.
func TestOneUserSixtyFourClicksOverHTTP(t *testing.T) {
	ts := startServer(t, serverOptions{})
	ts.define(scopedCampaign("clicks", 2, 100))
	got := make([]response, 64)
	errs := make([]error, 64)
	parallel(64, func(i int) {
		got[i], errs[i] = tryReserve(ts.base, "clicks", fmt.Sprintf("s%d", i%2+1), fmt.Sprintf("r%d", i), "bob")
	})
	accepted := 0
	for i, r := range got {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		switch r.status {
		case http.StatusAccepted:
			accepted++
		case http.StatusConflict, http.StatusTooManyRequests:
		default:
			t.Fatalf("click %d: %v", i, r)
		}
	}
	if accepted != 1 {
		t.Fatalf("%d clicks accepted", accepted)
	}
	if a := ts.campaignAudit("clicks"); livePurchases(a) != 1 {
		t.Fatalf("audit: %v", a)
	}
}

// TestConcurrentPUTsKeepOnePurchaseLimit: two PUTs of one new campaign,
// one with purchase_limit "campaign" and one without (each naming SKUs
// of its own), sent at once: exactly one is defined (201), the other is
// 409 DEFINITION_CONFLICT on purchase_limit with nothing of it defined,
// and the campaign shows the winner's purchase_limit on all its SKUs.
func TestConcurrentPUTsKeepOnePurchaseLimit(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	for round := range 4 {
		id := fmt.Sprintf("race%d", round)
		bodies := [2]map[string]any{
			scopedCampaign(id, 8, 5), // s1..s8
			campaign(id, "15m", map[string]int{"b1": 5, "b2": 5, "b3": 5, "b4": 5, "b5": 5, "b6": 5, "b7": 5, "b8": 5}),
		}
		var rs [2]response
		var errs [2]error
		parallel(2, func(i int) {
			rs[i], errs[i] = try(http.MethodPut, ts.base+"/admin/campaigns/"+id, bodies[i], map[string]string{"Authorization": "Bearer " + testToken})
		})
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		won := -1
		for i, r := range rs {
			if r.status == http.StatusCreated {
				if won >= 0 {
					t.Fatalf("%s: both PUTs defined: %v / %v", id, rs[0], rs[1])
				}
				won = i
			}
		}
		if won < 0 {
			t.Fatalf("%s: neither PUT defined: %v / %v", id, rs[0], rs[1])
		}
		lost := rs[1-won]
		want(t, lost, http.StatusConflict, "DEFINITION_CONFLICT")
		if !strings.Contains(lost.str("detail"), "purchase_limit") {
			t.Fatalf("%s: the losing PUT: %v, want the purchase_limit conflict", id, lost)
		}
		got := ts.admin(http.MethodGet, "/admin/campaigns/"+id, nil)
		scope := map[int]string{0: "campaign", 1: "sku"}[won]
		if got.str("purchase_limit") != scope || len(got.body["skus"].([]any)) != 8 || got.body["partly_defined"] != nil {
			t.Fatalf("%s: %v, want the winning PUT's 8 SKUs with purchase_limit %q", id, got, scope)
		}
	}
}
