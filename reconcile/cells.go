package reconcile

import (
	"context"
	"fmt"
	"slices"

	"github.com/seckill/seckill/cells"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/ledger"
)

// FromCells reads seckill's side of a campaign sold by a cluster of cells
// (its cells and their addresses published in etcd): each cell's export
// and refund list of each SKU, through its admin API with clientOf(its
// base URL). A celled SKU's counts are its cluster audit's
// (cells.AuditSKU: the cells' counts added up, and the units no cell holds,
// free in the ledger or never granted, counted as available), so
// sale_limit = available + reserved + confirmed holds for the cluster. A
// campaign defined locally on one cell is read from that cell as from one
// seckilld. It also returns the clients by cell, whose feeds hold the
// reservations' events (NameEvents). A cell that cannot be read is an
// error: its reservations would be missing from the comparison.
func FromCells(ctx context.Context, l *ledger.Ledger, clientOf func(baseURL string) (*client.Client, error), token, campaignID, skuID string) ([]Reservation, []SKU, map[string]*client.Client, error) {
	servers, err := cells.CampaignServers(ctx, l, campaignID, skuID)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("etcd: %w", err)
	}
	if len(servers) == 0 {
		return nil, nil, nil, fmt.Errorf("etcd knows no cell of campaign %s (neither published nor defined locally on a cell)", campaignID)
	}
	clients := map[string]*client.Client{}
	for cell, addr := range servers {
		if addr == "" {
			return nil, nil, nil, fmt.Errorf("cell %s announced no address in etcd", cell)
		}
		if clients[cell], err = clientOf(addr); err != nil {
			return nil, nil, nil, fmt.Errorf("cell %s: %w", cell, err)
		}
	}
	published, err := cells.ReadPublished(ctx, l, "")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("etcd: %w", err)
	}
	published = slices.DeleteFunc(published, func(p cells.Published) bool {
		return p.Definition.CampaignID != campaignID || skuID != "" && p.Definition.SKUID != skuID
	})
	if len(published) == 0 { // defined locally on one cell
		for _, c := range clients {
			reservations, skus, err := FromServer(ctx, c, campaignID, skuID)
			return reservations, skus, clients, err
		}
	}
	var reservations []Reservation
	var skus []SKU
	for _, p := range published {
		a, err := cells.AuditSKU(ctx, l, p, servers, token)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("etcd: %w", err)
		}
		available := a.Free + a.NeverGranted
		for _, cell := range p.Map.Cells {
			ca := a.Cells[cell]
			if ca.WrittenOff > 0 {
				return nil, nil, nil, fmt.Errorf("cell %s of %s/%s was written off (its disk was lost): its reservations cannot be read", cell, campaignID, p.Definition.SKUID)
			}
			if !ca.Reachable {
				return nil, nil, nil, fmt.Errorf("cell %s (%s) of %s/%s: %s", cell, ca.URL, campaignID, p.Definition.SKUID, ca.Error)
			}
			available += uint64(ca.Available)
			if reservations, err = readSKU(ctx, clients[cell], campaignID, p.Definition.SKUID, reservations); err != nil {
				return nil, nil, nil, fmt.Errorf("cell %s: %w", cell, err)
			}
		}
		skus = append(skus, SKU{SKUID: p.Definition.SKUID, SaleLimit: int64(a.SaleLimit), Available: int64(available),
			Reserved: int64(a.Reserved), Confirmed: int64(a.Sold)})
	}
	return reservations, skus, clients, nil
}
