package cells

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/ledger"
)

// Published is a celled SKU as the control plane publishes it: the
// definition every cell applies (with its own Cell and the map's
// version), the frozen cell map, the ledger's top-up chunk and the
// initial grants (allocation 1 of each cell).
type Published struct {
	Definition sku.Definition `json:"definition"` // IDKey and Cell unset
	Map        Map            `json:"map"`
}

// definitionJSON is the stored form of a published definition.
type definitionJSON struct {
	CampaignID      string `json:"campaign_id"`
	SKUID           string `json:"sku_id"`
	StartAt         int64  `json:"start_at_ms"`
	EndAt           int64  `json:"end_at_ms"`
	PaymentWindowMs int64  `json:"payment_window_ms"`
	SaleLimit       uint32 `json:"sale_limit"`
	ReleaseOnClose  bool   `json:"release_on_close"`
	// PurchaseLimit is "campaign" for a campaign-scope campaign, absent
	// for "sku" (so a definition published before the field existed
	// reads as "sku").
	PurchaseLimit string `json:"purchase_limit,omitempty"`
}

// Publish publishes a celled SKU in one etcd transaction: its definition,
// its frozen cell map, its ledger and the initial grants; ledger.ErrExists
// when the SKU was published before (nothing is changed then),
// sku.ErrInvalidDefinition when d is no valid new definition
// (sku.Definition.ValidateNew), ErrBadMap or sku.ErrInvalidDefinition when
// the campaign's SKUs published already disagree with it (CheckCampaign). The campaign's first publish also
// creates its routing (ledger.CampaignKey: the purchase limit, and the
// map with campaign scope), and every later one requires it unchanged in
// its transaction, so two SKUs of a campaign published at once cannot
// both pass the check with different maps (the loser: ledger.ErrContended,
// publish it again).
func Publish(ctx context.Context, l *ledger.Ledger, d sku.Definition, m Map, chunk uint32, initial []ledger.InitialGrant) ([]ledger.Allocation, error) {
	d.IDKey, d.Cell, d.CellMapVersion = [16]byte{}, "", 0
	if err := d.ValidateNew(); err != nil {
		return nil, err
	}
	for _, g := range initial {
		if !m.Has(g.Cell) {
			return nil, fmt.Errorf("%w: initial grant to %q, not in the map", ErrBadMap, g.Cell)
		}
	}
	published, err := ReadPublished(ctx, l, "")
	if err != nil {
		return nil, err
	}
	s := ledger.SKU{Campaign: d.CampaignID, SKU: d.SKUID}
	mapOp, err := PublishOp(l, s, m)
	if err != nil {
		return nil, err
	}
	j := definitionJSON{d.CampaignID, d.SKUID, d.StartAt, d.EndAt, d.PaymentWindowMs, d.SaleLimit, d.ReleaseOnClose, ""}
	if d.PurchaseLimit != sku.PurchaseLimitSKU {
		j.PurchaseLimit = d.PurchaseLimit.String()
	}
	b, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	ops := []clientv3.Op{mapOp, clientv3.OpPut(l.DefinitionKey(s), string(b))}
	key := l.CampaignKey(d.CampaignID)
	resp, err := l.Client().Get(ctx, key)
	if err != nil {
		return nil, err
	}
	var cond clientv3.Cmp
	if len(resp.Kvs) == 0 {
		r := campaignRouting{FirstSKU: d.SKUID, PurchaseLimit: d.PurchaseLimit.String()}
		if d.PurchaseLimit == sku.PurchaseLimitCampaign {
			r.Map = &m
		}
		rb, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		cond, ops = clientv3.Compare(clientv3.CreateRevision(key), "=", 0), append(ops, clientv3.OpPut(key, string(rb)))
	} else {
		var r campaignRouting
		limit, ok := sku.PurchaseLimit(0), false
		if err := json.Unmarshal(resp.Kvs[0].Value, &r); err == nil {
			limit, ok = sku.ParsePurchaseLimit(r.PurchaseLimit)
		}
		if !ok || (limit == sku.PurchaseLimitCampaign) != (r.Map != nil) {
			return nil, fmt.Errorf("%s: %q is not a campaign's routing", key, resp.Kvs[0].Value)
		}
		first := Published{Definition: sku.Definition{CampaignID: d.CampaignID, SKUID: r.FirstSKU, PurchaseLimit: limit}}
		if r.Map != nil {
			first.Map = *r.Map
		}
		published = append(published, first)
		cond = clientv3.Compare(clientv3.ModRevision(key), "=", resp.Kvs[0].ModRevision)
	}
	if err := CheckCampaign(published, Published{Definition: d, Map: m}); err != nil {
		return nil, err
	}
	return l.PublishIf(ctx, s, d.SaleLimit, chunk, initial, []clientv3.Cmp{cond}, ops...)
}

// campaignRouting is the stored form of a campaign's routing
// (ledger.CampaignKey): the purchase limit of its celled SKUs and, with
// "campaign", the one cell map they share. Its first SKU's publish
// creates it; it never changes.
type campaignRouting struct {
	FirstSKU      string `json:"first_sku"`
	PurchaseLimit string `json:"purchase_limit"`
	Map           *Map   `json:"cell_map,omitempty"`
}

// ReadPublished returns every SKU published under the ledger's prefix
// whose cell map names cell ("" : every SKU), sorted by key.
func ReadPublished(ctx context.Context, l *ledger.Ledger, cell string) ([]Published, error) {
	resp, err := l.Client().Get(ctx, l.CampaignsPrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	defs := map[string]sku.Definition{}
	maps := map[string]Map{}
	var order []string
	for _, kv := range resp.Kvs {
		key := string(kv.Key)
		switch {
		case strings.HasSuffix(key, "/definition"):
			var j definitionJSON
			if err := json.Unmarshal(kv.Value, &j); err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			limit, ok := sku.ParsePurchaseLimit(j.PurchaseLimit)
			if !ok {
				return nil, fmt.Errorf("%s: purchase_limit %q", key, j.PurchaseLimit)
			}
			base := strings.TrimSuffix(key, "/definition")
			defs[base] = sku.Definition{CampaignID: j.CampaignID, SKUID: j.SKUID, StartAt: j.StartAt, EndAt: j.EndAt,
				PaymentWindowMs: j.PaymentWindowMs, SaleLimit: j.SaleLimit, ReleaseOnClose: j.ReleaseOnClose, PurchaseLimit: limit}
			order = append(order, base)
		case strings.HasSuffix(key, "/cellmap"):
			var m Map
			if err := json.Unmarshal(kv.Value, &m); err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			if err := m.Validate(); err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			maps[strings.TrimSuffix(key, "/cellmap")] = m
		}
	}
	var out []Published
	for _, base := range order {
		m, ok := maps[base]
		if !ok || (cell != "" && !m.Has(cell)) {
			continue
		}
		out = append(out, Published{Definition: defs[base], Map: m})
	}
	return out, nil
}

// ForCell returns the definition cell applies: the published one with its
// cell and the map's version.
func (p Published) ForCell(cell string) sku.Definition {
	d := p.Definition
	d.Cell, d.CellMapVersion = cell, p.Map.Version
	return d
}

// CheckCampaign checks next against the SKUs of its campaign published
// already: the same purchase_limit (sku.ErrInvalidDefinition otherwise,
// as a cell's engine refuses a second scope), and with purchase_limit
// "campaign" the same cell map (ErrBadMap otherwise): a user's slot is
// then the same on every SKU of the campaign (Slot), and only one map
// makes it the same cell, whose purchase registry sees all the user's
// purchases. Pure.
func CheckCampaign(published []Published, next Published) error {
	d := next.Definition
	for i := range published {
		o := &published[i]
		if o.Definition.CampaignID != d.CampaignID || o.Definition.SKUID == d.SKUID {
			continue
		}
		if err := sku.CheckCampaignPurchaseLimit(&o.Definition, &d); err != nil {
			return err
		}
		if d.PurchaseLimit == sku.PurchaseLimitCampaign && !o.Map.Same(&next.Map) {
			return fmt.Errorf("%w: campaign %s has purchase_limit \"campaign\": every SKU must share one cell map (a user must reach one cell, whose purchase registry sees all the user's purchases), but SKU %s was published with map version %d over %v",
				ErrBadMap, d.CampaignID, o.Definition.SKUID, o.Map.Version, o.Map.Cells)
		}
	}
	return nil
}
