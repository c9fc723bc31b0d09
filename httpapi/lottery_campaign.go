package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/lottery"
)

// AllocationLottery is the allocation of a SKU sold by draw (a SKU of a
// campaign document with "allocation":"lottery"); without it a SKU is sold
// first come, first served.
const AllocationLottery = "lottery"

// BeaconJSON names the public randomness round of a lottery: source
// "drand-quicknet", whose round R is published at 1692803367 + (R-1) × 3
// seconds Unix time; it must come after entries_close_at.
type BeaconJSON struct {
	Source string `json:"source"`
	Round  uint64 `json:"round"`
}

// TierQuotaJSON is one declared tier of a lottery: {"tier":2,"quota":2000}
// or {"tier":0,"quota":"rest"}.
type TierQuotaJSON struct {
	Tier  uint8      `json:"tier"`
	Quota QuotaValue `json:"quota"`
}

// QuotaValue is a tier's quota: a count of units, or "rest".
type QuotaValue struct {
	Count uint32
	Rest  bool
}

// UnmarshalJSON reads a positive integer or the string "rest".
func (q *QuotaValue) UnmarshalJSON(data []byte) error {
	var rest string
	if json.Unmarshal(data, &rest) == nil {
		if rest != "rest" {
			return &fieldError{field: "quota", want: `a positive integer or "rest"`}
		}
		*q = QuotaValue{Rest: true}
		return nil
	}
	var n uint32
	if err := json.Unmarshal(data, &n); err != nil || n == 0 {
		return &fieldError{field: "quota", want: `a positive integer or "rest"`}
	}
	*q = QuotaValue{Count: n}
	return nil
}

// MarshalJSON writes the count, or "rest".
func (q QuotaValue) MarshalJSON() ([]byte, error) {
	if q.Rest {
		return []byte(`"rest"`), nil
	}
	return json.Marshal(q.Count)
}

// lotteryRules fills d.Lottery from the SKU's lottery fields; a SKU
// without "allocation" must have none of them.
func (s CampaignSKU) lotteryRules(d *sku.Definition) error {
	if s.Allocation == "" {
		if s.EntriesOpenAt != "" || s.EntriesCloseAt != "" || s.Beacon != nil || s.Waitlist != nil || len(s.Tiers) > 0 {
			return fmt.Errorf("the lottery fields need \"allocation\":%q", AllocationLottery)
		}
		return nil
	}
	if s.Allocation != AllocationLottery {
		return &fieldError{field: "allocation", want: fmt.Sprintf("%q or absent", AllocationLottery)}
	}
	open, err := parseCampaignTime("entries_open_at", s.EntriesOpenAt)
	if err != nil {
		return err
	}
	closeAt, err := parseCampaignTime("entries_close_at", s.EntriesCloseAt)
	if err != nil {
		return err
	}
	if open.IsZero() || closeAt.IsZero() || s.Beacon == nil {
		return errors.New("a lottery SKU needs entries_open_at, entries_close_at and beacon")
	}
	rules := &sku.LotteryRules{
		EntriesOpenAt: open.UnixMilli(), EntriesCloseAt: closeAt.UnixMilli(),
		Beacon: lottery.Beacon{Source: s.Beacon.Source, Round: s.Beacon.Round}, Waitlist: d.SaleLimit,
	}
	if s.Waitlist != nil {
		rules.Waitlist = *s.Waitlist
	}
	for _, t := range s.Tiers {
		rules.Tiers = append(rules.Tiers, lottery.Quota{Tier: t.Tier, Count: t.Quota.Count, Rest: t.Quota.Rest})
	}
	d.Lottery = rules
	return nil
}

// tierQuotasJSON renders a lottery's tier quotas as a campaign document
// writes them.
func tierQuotasJSON(quotas []lottery.Quota) []TierQuotaJSON {
	var out []TierQuotaJSON
	for _, q := range quotas {
		out = append(out, TierQuotaJSON{Tier: q.Tier, Quota: QuotaValue{Count: q.Count, Rest: q.Rest}})
	}
	return out
}
