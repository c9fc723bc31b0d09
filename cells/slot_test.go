package cells

import (
	"errors"
	"fmt"
	"testing"

	"github.com/seckill/seckill/actors/sku"
)

// TestSlotByCampaignScope: with purchase_limit "campaign" a user's slot,
// and so (one map) cell, is the same on every SKU of the campaign, and
// depends on the campaign and the user; with "sku" it is hashed with the
// SKU, so users land on different cells for different SKUs. The router,
// the guard and the batch split route by the same rule (Published.CellOf).
func TestSlotByCampaignScope(t *testing.T) {
	m, err := EvenMap(1, []string{"c1", "c2"})
	if err != nil {
		t.Fatal(err)
	}
	def := func(skuID string, limit sku.PurchaseLimit) Published {
		return Published{Definition: sku.Definition{CampaignID: "phones", SKUID: skuID, PurchaseLimit: limit}, Map: m}
	}
	red, blue := def("red", sku.PurchaseLimitCampaign), def("blue", sku.PurchaseLimitCampaign)
	redSKU, blueSKU := def("red", sku.PurchaseLimitSKU), def("blue", sku.PurchaseLimitSKU)
	routes := NewRoutes([]Published{red, blue})
	guard := &Guard{cell: "c1"}
	guard.skus.Store(&map[string]*Published{"phones/red": &red, "phones/blue": &blue})
	cells, apart, unmoved, slots := map[string]bool{}, 0, 0, map[int]bool{}
	for u := range 400 {
		user := fmt.Sprintf("u%d", u)
		s := Slot(sku.PurchaseLimitCampaign, "phones", "red", user)
		if s != Slot(sku.PurchaseLimitCampaign, "phones", "blue", user) || s < 0 || s >= Slots {
			t.Fatalf("user %s: slot %d on red, %d on blue", user, s, Slot(sku.PurchaseLimitCampaign, "phones", "blue", user))
		}
		if s == Slot(sku.PurchaseLimitCampaign, "tablets", "red", user) {
			unmoved++ // the campaign is hashed: almost every user's slot moves with it
		}
		slots[s] = true
		cell := red.CellOf(user)
		if cell != blue.CellOf(user) {
			t.Fatalf("user %s: cell %s on red, %s on blue", user, cell, blue.CellOf(user))
		}
		cells[cell] = true
		body := []byte(`{"request_id":"r","user_id":"` + user + `"}`)
		for _, skuID := range []string{"red", "blue"} {
			if got := routes.Decide("POST", "/v1/campaigns/phones/skus/"+skuID+"/reservations", body); got.Cell != cell {
				t.Fatalf("user %s on %s routed to %s, want %s", user, skuID, got.Cell, cell)
			}
			if err := guard.CheckCell("phones", skuID, user); (err == nil) != (cell == "c1") {
				t.Fatalf("user %s on %s at c1 (owner %s): guard says %v", user, skuID, cell, err)
			}
		}
		if redSKU.CellOf(user) != blueSKU.CellOf(user) {
			apart++
		}
	}
	if len(cells) != 2 || len(slots) < 300 {
		t.Fatalf("400 users reached cells %v and %d slots", cells, len(slots))
	}
	if apart < 100 || unmoved > 20 {
		t.Fatalf("with purchase_limit \"sku\" %d of 400 users are routed apart for two SKUs (want many); %d keep their slot in another campaign (want few)", apart, unmoved)
	}
	split, err := SplitBatch(&blue, []byte(`{"items":[{"request_id":"a","user_id":"u1"},{"request_id":"b","user_id":"u2"},{"request_id":"c","user_id":"u3"}]}`), 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range split.Parts {
		for _, at := range part.At {
			if want := red.CellOf(fmt.Sprintf("u%d", at+1)); part.Cell != want {
				t.Fatalf("batch item %d in %s, want %s (its cell on red)", at, part.Cell, want)
			}
		}
	}
}

// TestCheckCampaign: a campaign-scope SKU is published only beside SKUs of
// its campaign with the same scope and the same cell map; SKU scope
// allows different maps; other campaigns do not matter.
func TestCheckCampaign(t *testing.T) {
	m12, _ := EvenMap(1, []string{"c1", "c2"})
	m123, _ := EvenMap(1, []string{"c1", "c2", "c3"})
	m12v2, _ := EvenMap(2, []string{"c1", "c2"})
	pub := func(campaign, skuID string, limit sku.PurchaseLimit, m Map) Published {
		return Published{Definition: sku.Definition{CampaignID: campaign, SKUID: skuID, PurchaseLimit: limit}, Map: m}
	}
	camp, skuScope := sku.PurchaseLimitCampaign, sku.PurchaseLimitSKU
	published := []Published{pub("phones", "red", camp, m12), pub("tabs", "a", skuScope, m12), pub("other", "x", camp, m123)}
	for _, c := range []struct {
		name string
		next Published
		want error
	}{
		{"same map", pub("phones", "blue", camp, m12), nil},
		{"the same SKU (the ledger refuses it)", pub("phones", "red", camp, m123), nil},
		{"other cells", pub("phones", "blue", camp, m123), ErrBadMap},
		{"another version", pub("phones", "blue", camp, m12v2), ErrBadMap},
		{"another scope", pub("phones", "blue", skuScope, m12), sku.ErrInvalidDefinition},
		{"campaign scope beside sku scope", pub("tabs", "b", camp, m12), sku.ErrInvalidDefinition},
		{"sku scope, another map", pub("tabs", "b", skuScope, m123), nil},
		{"a new campaign", pub("new", "a", camp, m123), nil},
	} {
		err := CheckCampaign(published, c.next)
		if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}
