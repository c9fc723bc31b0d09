package cells

import (
	"context"
	"slices"

	"github.com/seckill/seckill/ledger"
)

// CampaignServers returns the cells that sell campaignID, each with the
// base URL it announced in etcd ("" until it announced one): the cells of
// the maps of the campaign's published SKUs (of skuID alone when set), or,
// for a campaign defined locally on one cell (ledger.ClaimLocal), that
// cell. An empty map: etcd knows nothing of the campaign yet. A consumer
// of the campaign's feed, or a reconciliation, reads each of them: a cell
// logs its own share of a celled SKU, under a feed history of its own.
func CampaignServers(ctx context.Context, l *ledger.Ledger, campaignID, skuID string) (map[string]string, error) {
	published, err := ReadPublished(ctx, l, "")
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, p := range published {
		if p.Definition.CampaignID == campaignID && (skuID == "" || p.Definition.SKUID == skuID) {
			ids = append(ids, p.Map.Cells...)
		}
	}
	if len(ids) == 0 {
		resp, err := l.Client().Get(ctx, l.LocalKey(campaignID))
		if err != nil {
			return nil, err
		}
		for _, kv := range resp.Kvs {
			ids = append(ids, string(kv.Value))
		}
	}
	addrs, err := l.CellAddrs(ctx)
	if err != nil {
		return nil, err
	}
	servers := map[string]string{}
	for _, id := range slices.Compact(slices.Sorted(slices.Values(ids))) {
		servers[id] = addrs[id]
	}
	return servers, nil
}
