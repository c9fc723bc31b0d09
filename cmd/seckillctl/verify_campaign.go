package main

import (
	"fmt"
	"sort"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/purchase"
	"github.com/seckill/seckill/actors/sku"
)

// campaignCheckJSON is verify's check of a campaign whose purchase_limit
// is "campaign": at most one live purchase, or lottery entry
// that may still win, per user over its SKUs.
type campaignCheckJSON struct {
	CampaignID    string   `json:"campaign_id"`
	PurchaseLimit string   `json:"purchase_limit"`
	SKUs          int      `json:"skus"`
	LiveUsers     int      `json:"live_users"`
	OK            bool     `json:"ok"`
	Problems      []string `json:"problems"`
}

// skuPurchases is what verify keeps of one SKU for its campaign's check.
type skuPurchases struct {
	dir        string
	campaignID string
	limit      sku.PurchaseLimit
	live       map[string]string // user -> live reservation id
	holds      map[string]string // live and the lottery entries that may still win (purchase.Holds)
}

// checkCampaigns checks each campaign-scope campaign among skus (verified
// SKUs, in directory order). Beside a running engine the SKUs are read one
// after another, so a user seen live on two of them is confirmed by
// reading them all again: each of the holds (reservations, lottery
// entries) still holding at the second read held from its first read on
// (a hold that ended never comes back), so all held together.
func checkCampaigns(skus []skuPurchases) []campaignCheckJSON {
	byCampaign := map[string][]skuPurchases{}
	var order []string
	for _, s := range skus {
		c := s.campaignID
		if _, ok := byCampaign[c]; !ok {
			order = append(order, c)
		}
		byCampaign[c] = append(byCampaign[c], s)
	}
	var out []campaignCheckJSON
	for _, c := range order {
		list := byCampaign[c]
		if list[0].limit != sku.PurchaseLimitCampaign {
			continue
		}
		check := campaignCheckJSON{CampaignID: c, PurchaseLimit: list[0].limit.String(), SKUs: len(list), Problems: []string{}}
		lives := make([]map[string]string, len(list))
		holds := make([]map[string]string, len(list))
		for i, s := range list {
			lives[i], holds[i] = s.live, s.holds
			if s.limit != list[0].limit {
				check.Problems = append(check.Problems, fmt.Sprintf("%s: purchase_limit %q, the campaign's first SKU %q", s.dir, s.limit, list[0].limit))
			}
		}
		overlaps := purchase.Overlaps(holds)
		check.LiveUsers = purchase.Users(lives)
		if len(overlaps) > 0 {
			again := map[string]bool{} // hold ids holding at the second read
			for _, s := range list {
				st, err := loadState(s.dir, loadOptions{})
				if err != nil {
					check.Problems = append(check.Problems, fmt.Sprintf("%s: reading again: %v", s.dir, err))
					continue
				}
				for _, id := range purchase.Holds(st.m.Definition().SKUID, st.m.LivePurchases(), st.m.LiveEntries()) {
					again[id] = true
				}
			}
			for user, ids := range overlaps {
				still := 0
				for _, id := range ids {
					if again[id] {
						still++
					}
				}
				if still == len(ids) {
					check.Problems = append(check.Problems, actors.OverlapViolation(user, ids))
				}
			}
			sort.Strings(check.Problems)
		}
		check.OK = len(check.Problems) == 0
		out = append(out, check)
	}
	return out
}
