package orders

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/seckill/seckill/client"
)

// Redeliver is the repair seckillctl reconcile prints for an order that
// lacks some of its reservation's events (missing, behind, edited by
// hand): it reads each reservation's events from its SKU's feed (from the
// start of the retained log) and applies them again in log order, in one
// transaction per reservation, whether or not order_events has them. An
// event applied again changes nothing it did before, so a repeat is
// harmless. It returns the events applied per reservation.
func (s *Store) Redeliver(ctx context.Context, c *client.Client, reservationIDs []string) (map[string]int, error) {
	applied := map[string]int{}
	for _, id := range reservationIDs {
		campaignID, skuID, ok := skuOf(id)
		if !ok {
			return applied, fmt.Errorf("redeliver: %q is not a reservation id (campaign~sku~[cell~]seq~tag)", id)
		}
		var events []client.Event
		for cursor := ""; ; {
			page, err := c.Feed(ctx, client.FeedRequest{CampaignID: campaignID, SKUID: skuID, After: cursor, Types: []string{
				client.TypeReservationCreated, client.TypeReservationPaid, client.TypeReservationClosed,
				client.TypeReservationReleased, client.TypeRefundRequired}})
			if err != nil {
				return applied, fmt.Errorf("redeliver %s: %w", id, err)
			}
			for _, e := range page.Events {
				if e.Subject == id {
					events = append(events, e)
				}
			}
			if len(page.Events) == 0 {
				break
			}
			cursor = page.NextCursor
		}
		if len(events) == 0 || events[0].Type != client.TypeReservationCreated {
			return applied, fmt.Errorf("redeliver %s: the feed of %s/%s no longer holds its creation (compacted past it, or no such reservation): "+
				"take its row from the export (GET /admin/campaigns/%s/skus/%s/reservations)", id, campaignID, skuID, campaignID, skuID)
		}
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if _, err := record(ctx, tx, events); err != nil {
				return err
			}
			batch := &pgx.Batch{}
			for i := range events {
				if err := queueEffect(batch, &events[i]); err != nil {
					return err
				}
			}
			return tx.SendBatch(ctx, batch).Close()
		})
		if err != nil {
			return applied, fmt.Errorf("redeliver %s: %w", id, err)
		}
		applied[id] = len(events)
	}
	return applied, nil
}

// skuOf reads the campaign and SKU a reservation id names.
func skuOf(id string) (campaignID, skuID string, ok bool) {
	parts := strings.Split(id, "~")
	if len(parts) != 4 && len(parts) != 5 {
		return "", "", false
	}
	return parts[0], parts[1], parts[0] != "" && parts[1] != ""
}
