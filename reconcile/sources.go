package reconcile

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/orders"
)

// LoadOrders reads the campaign's orders in one snapshot.
func LoadOrders(ctx context.Context, url, campaignID, skuID string) (map[string]*orders.Order, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx)
	return orders.Load(ctx, tx, campaignID, skuID)
}

// LoadSetApart counts what re-anchorings of the order service set apart
// of the campaign (orders.LoadSetApart): no comparison with seckill shows
// it, so the report carries it (Report.SetApart).
func LoadSetApart(ctx context.Context, url, campaignID, skuID string) ([]orders.SetApart, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	return orders.LoadSetApart(ctx, conn, campaignID, skuID)
}

// FromServer reads each SKU's audit, export and refund list from a
// running seckilld.
func FromServer(ctx context.Context, c *client.Client, campaignID, skuID string) ([]Reservation, []SKU, error) {
	ids := []string{skuID}
	if skuID == "" {
		campaign, err := c.Campaign(ctx, campaignID)
		if err != nil {
			return nil, nil, err
		}
		ids = ids[:0]
		for _, s := range campaign.SKUs {
			ids = append(ids, s.SKUID)
		}
	}
	var reservations []Reservation
	var skus []SKU
	for _, id := range ids {
		audit, err := c.Audit(ctx, campaignID, id)
		if err != nil {
			return nil, nil, err
		}
		skus = append(skus, SKU{SKUID: id, SaleLimit: audit.SaleLimit, Available: audit.Available, Reserved: audit.Reserved,
			Confirmed: audit.Confirmed, Cell: audit.Cell, Granted: audit.Granted, Returned: audit.Returned})
		if reservations, err = readSKU(ctx, c, campaignID, id, reservations); err != nil {
			return nil, nil, err
		}
	}
	return reservations, skus, nil
}

// readSKU appends the reservations of one SKU at c (its export, then its
// refund list) to reservations.
func readSKU(ctx context.Context, c *client.Client, campaignID, skuID string, reservations []Reservation) ([]Reservation, error) {
	first := len(reservations)
	if _, err := c.Export(ctx, campaignID, skuID, func(r client.ExportRow) error {
		reservations = append(reservations, Reservation{ReservationID: r.ReservationID, RequestID: r.RequestID, UserID: r.UserID,
			SKUID: skuID, TokenID: r.TokenID, State: r.State, PaymentID: r.PaymentID, Amount: r.Amount, TokenReleased: r.TokenReleased,
			CreatedAt: r.CreatedAt, ChangedAt: Latest(r.CreatedAt, r.PaidAt, r.ClosedAt)})
		return nil
	}); err != nil {
		return nil, err
	}
	// The refund list is read after the export: a refund of a
	// reservation the export has not is of one made since, within the lag.
	refunds, err := c.Refunds(ctx, campaignID, skuID)
	if err != nil {
		return nil, err
	}
	index := make(map[string]int, len(reservations)-first)
	for i := first; i < len(reservations); i++ {
		index[reservations[i].ReservationID] = i
	}
	for _, f := range refunds {
		if i, ok := index[f.ReservationID]; ok {
			reservations[i].Refunds = append(reservations[i].Refunds, f.PaymentID)
			reservations[i].ChangedAt = Latest(reservations[i].ChangedAt, f.At)
		}
	}
	return reservations, nil
}

// Latest is the latest of ts.
func Latest(ts ...time.Time) time.Time {
	var l time.Time
	for _, t := range ts {
		if t.After(l) {
			l = t
		}
	}
	return l
}
