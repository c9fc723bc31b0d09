package memengine

import (
	"sort"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
)

// activity is what the twin counts of a SKU for actors.Activity: the
// reserve answers it decided and the reservations it expired. It has no
// log: its durable and last index are the records decided, it never
// fsyncs and never snapshots by itself.
type activity struct {
	accepted, soldOut, alreadyPurchased, expired uint64
}

// reserved counts one reserve answer.
func (a *activity) reserved(res sku.Result) {
	switch res.Outcome {
	case sku.OutcomeAccepted:
		a.accepted++
	case sku.OutcomeSoldOut:
		a.soldOut++
	case sku.OutcomeAlreadyPurchased:
		a.alreadyPurchased++
	}
}

// AllActivity implements httpapi.ActivityReader, sorted by campaign and
// SKU id.
func (e *Engine) AllActivity() []actors.Activity {
	e.mu.Lock()
	defer e.mu.Unlock()
	keys := make([]skuKey, 0, len(e.skus))
	for k := range e.skus {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { // the keys, not the large Activity values
		if keys[i].campaignID != keys[j].campaignID {
			return keys[i].campaignID < keys[j].campaignID
		}
		return keys[i].skuID < keys[j].skuID
	})
	out := make([]actors.Activity, 0, len(e.skus))
	for _, k := range keys {
		s := e.skus[k]
		a := actors.Activity{
			CampaignID: k.campaignID, SKUID: k.skuID,
			Accepted: s.act.accepted, SoldOut: s.act.soldOut, AlreadyPurchased: s.act.alreadyPurchased,
			Expired:      s.act.expired,
			DurableIndex: s.index, LastIndex: s.index,
		}
		if at, ok := s.m.NextExpiry(); ok && at > 0 {
			a.EarliestExpireAt = at
		}
		out = append(out, a)
	}
	return out
}
