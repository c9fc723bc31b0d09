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
}

// Publish publishes a celled SKU in one etcd transaction: its definition,
// its frozen cell map, its ledger and the initial grants; ledger.ErrExists
// when the SKU was published before (nothing is changed then).
func Publish(ctx context.Context, l *ledger.Ledger, d sku.Definition, m Map, chunk uint32, initial []ledger.InitialGrant) ([]ledger.Allocation, error) {
	d.IDKey, d.Cell, d.CellMapVersion = [16]byte{}, "", 0
	if err := d.Validate(); err != nil {
		return nil, err
	}
	for _, g := range initial {
		if !m.Has(g.Cell) {
			return nil, fmt.Errorf("%w: initial grant to %q, not in the map", ErrBadMap, g.Cell)
		}
	}
	s := ledger.SKU{Campaign: d.CampaignID, SKU: d.SKUID}
	mapOp, err := PublishOp(l, s, m)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(definitionJSON{d.CampaignID, d.SKUID, d.StartAt, d.EndAt, d.PaymentWindowMs, d.SaleLimit, d.ReleaseOnClose})
	if err != nil {
		return nil, err
	}
	return l.Publish(ctx, s, d.SaleLimit, chunk, initial, mapOp, clientv3.OpPut(l.DefinitionKey(s), string(b)))
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
			base := strings.TrimSuffix(key, "/definition")
			defs[base] = sku.Definition{CampaignID: j.CampaignID, SKUID: j.SKUID, StartAt: j.StartAt, EndAt: j.EndAt,
				PaymentWindowMs: j.PaymentWindowMs, SaleLimit: j.SaleLimit, ReleaseOnClose: j.ReleaseOnClose}
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
