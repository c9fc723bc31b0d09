package httpapi

import (
	"github.com/seckill/seckill/internal/timefmt"
	"reflect"
	"testing"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/lottery"
)

// A lottery SKU's fields in a campaign document: the waitlist defaults to
// sale_limit (an explicit 0 stays 0), the rules render back as given, and
// the lottery fields without "allocation":"lottery", another allocation or
// a lottery without its window or beacon are refused.
func TestLotteryRulesOfCampaignSKU(t *testing.T) {
	beacon := &BeaconJSON{Source: lottery.SourceDrandQuicknet, Round: 40_000_000}
	lot := func(waitlist *uint32) CampaignSKU {
		return CampaignSKU{SKUID: "s", SaleLimit: 70, Allocation: AllocationLottery,
			EntriesOpenAt: "2030-01-01T10:00:00Z", EntriesCloseAt: "2030-01-01T10:15:00Z", Beacon: beacon, Waitlist: waitlist,
			Tiers: []TierQuotaJSON{{Tier: 2, Quota: QuotaValue{Count: 20}}, {Tier: 0, Quota: QuotaValue{Rest: true}}}}
	}
	zero := uint32(0)
	for name, c := range map[string]struct {
		s    CampaignSKU
		want uint32
	}{
		"waitlist left out": {lot(nil), 70},
		"waitlist 0":        {lot(&zero), 0},
	} {
		d := sku.Definition{SaleLimit: c.s.SaleLimit}
		if err := c.s.lotteryRules(&d); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d.Lottery == nil || d.Lottery.Waitlist != c.want || len(d.Lottery.Tiers) != 2 || !d.Lottery.Tiers[1].Rest || d.Lottery.Beacon.Round != beacon.Round {
			t.Fatalf("%s: rules %+v", name, d.Lottery)
		}
		if got := timefmt.Millis(d.Lottery.EntriesCloseAt); got != "2030-01-01T10:15:00.000Z" {
			t.Fatalf("%s: entries_close_at %s", name, got)
		}
		if tiers := tierQuotasJSON(d.Lottery.Tiers); !reflect.DeepEqual(tiers, c.s.Tiers) {
			t.Fatalf("%s: tiers rendered back as %+v, given %+v", name, tiers, c.s.Tiers)
		}
	}
	noAllocation := lot(nil)
	noAllocation.Allocation = ""
	otherAllocation := lot(nil)
	otherAllocation.Allocation = "auction"
	noBeacon := lot(nil)
	noBeacon.Beacon = nil
	noClose := lot(nil)
	noClose.EntriesCloseAt = ""
	for name, s := range map[string]CampaignSKU{"lottery fields without allocation": noAllocation,
		"another allocation": otherAllocation, "no beacon": noBeacon, "no entries_close_at": noClose} {
		d := sku.Definition{SaleLimit: s.SaleLimit}
		if err := s.lotteryRules(&d); err == nil {
			t.Errorf("%s: accepted (%+v)", name, d.Lottery)
		}
	}
}
