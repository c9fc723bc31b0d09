package orders

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/seckill/seckill/client"
)

// The repairs seckillctl reconcile prints re-deliver events by their id:
// each named event is read from the feed and applied again, whether or
// not order_events has it (a row deleted or edited by hand lost the
// effect of events recorded there). Every effect sets what its event says
// (queueEffect), so an event applied again changes nothing it did before,
// and a reservation's events applied again in log order leave its order
// as a consumer that never failed holds it.

// reservationTypes are the feed's event types that change an order.
var reservationTypes = []string{client.TypeReservationCreated, client.TypeReservationPaid, client.TypeReservationClosed,
	client.TypeReservationReleased, client.TypeRefundRequired}

// ReservationEvents reads the events of the reservations ids of one SKU
// from its feed at c (from the start of the retained log), each
// reservation's in log order, by reservation id. A reservation whose
// creation the feed no longer holds (compacted) has no events here.
func ReservationEvents(ctx context.Context, c *client.Client, campaignID, skuID string, ids map[string]bool) (map[string][]client.Event, error) {
	events := map[string][]client.Event{}
	for cursor := ""; ; {
		page, err := c.Feed(ctx, client.FeedRequest{CampaignID: campaignID, SKUID: skuID, After: cursor, Types: reservationTypes})
		if err != nil {
			return nil, fmt.Errorf("the feed of %s/%s: %w", campaignID, skuID, err)
		}
		for _, e := range page.Events {
			if ids[e.Subject] && (len(events[e.Subject]) > 0 || e.Type == client.TypeReservationCreated) {
				events[e.Subject] = append(events[e.Subject], e)
			}
		}
		if len(page.Events) == 0 {
			return events, nil
		}
		cursor = page.NextCursor
	}
}

// Redeliver applies again every event of each reservation (read from its
// SKU's feed at c), in log order, one transaction per reservation. It
// returns the events applied per reservation.
func (s *Store) Redeliver(ctx context.Context, c *client.Client, reservationIDs []string) (map[string]int, error) {
	applied := map[string]int{}
	for _, id := range reservationIDs {
		campaignID, skuID, ok := skuOf(id)
		if !ok {
			return applied, fmt.Errorf("redeliver: %q is not a reservation id (campaign~sku~[cell~]seq~tag)", id)
		}
		byID, err := ReservationEvents(ctx, c, campaignID, skuID, map[string]bool{id: true})
		if err != nil {
			return applied, fmt.Errorf("redeliver %s: %w", id, err)
		}
		if len(byID[id]) == 0 {
			return applied, fmt.Errorf("redeliver %s: the feed of %s/%s no longer holds its creation (compacted past it, or no such reservation): "+
				"take its row from the export (GET /admin/campaigns/%s/skus/%s/reservations)", id, campaignID, skuID, campaignID, skuID)
		}
		if err := s.ApplyAgain(ctx, byID[id]); err != nil {
			return applied, fmt.Errorf("redeliver %s: %w", id, err)
		}
		applied[id] = len(byID[id])
	}
	return applied, nil
}

// ApplyAgain applies events in the order given, in one transaction,
// whether or not order_events has them (it records those it lacks).
func (s *Store) ApplyAgain(ctx context.Context, events []client.Event) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
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
}

// ErrNoEvent: no server's feed holds the event asked for.
var ErrNoEvent = errors.New("orders: no such event in the feed")

// FetchEvent reads the event (source, id) from the feed of the first of
// servers that holds it (one seckilld; or every cell of the SKU: each
// logs its share under a history of its own, and a cell's feed refuses
// another's position with 400 BAD_CURSOR). source is
// /seckill/{campaign}/{sku}, id <history>-<index>. ErrNoEvent (wrapped,
// with each server's answer) when none holds it.
func FetchEvent(ctx context.Context, servers []*client.Client, source, id string) (client.Event, error) {
	campaignID, skuID, ok := SourceSKU(source)
	if !ok {
		return client.Event{}, fmt.Errorf("event source %q: want /seckill/{campaign}/{sku}", source)
	}
	history, n, ok := EventID(id)
	if !ok {
		return client.Event{}, fmt.Errorf("event id %q: want <history>-<log index>", id)
	}
	after := "" // the event of index 1 is the first of the log
	if n > 1 {
		after = history + "-" + strconv.FormatUint(n-1, 10)
	}
	var refusals []string
	for _, c := range servers {
		page, err := c.Feed(ctx, client.FeedRequest{CampaignID: campaignID, SKUID: skuID, After: after, Limit: 1})
		var e *client.Error
		switch {
		case errors.As(err, &e) && (e.Status == 400 || e.Status == 404 || e.Status == 409 || e.Status == 410):
			// Another cell's history (BAD_CURSOR), a server without the
			// SKU, an index past this log's end or on a history a restore
			// abandoned (CURSOR_DIVERGED), or compacted away.
			refusals = append(refusals, c.BaseURL()+": "+err.Error())
			continue
		case err != nil:
			return client.Event{}, fmt.Errorf("event %s of %s at %s: %w", id, source, c.BaseURL(), err)
		}
		if len(page.Events) > 0 && page.Events[0].ID == id {
			return page.Events[0], nil
		}
		refusals = append(refusals, c.BaseURL()+": not in its feed")
	}
	return client.Event{}, fmt.Errorf("%w: event %s of %s (a record of a type the feed leaves out, or compacted past): %s",
		ErrNoEvent, id, source, strings.Join(refusals, "; "))
}

// EventID reads an event id, <history>-<log index> (the index from 1).
func EventID(id string) (history string, index uint64, ok bool) {
	history, i, ok := strings.Cut(id, "-")
	n, err := strconv.ParseUint(i, 10, 64)
	if !ok || err != nil || n == 0 {
		return "", 0, false
	}
	return history, n, true
}

// SourceSKU reads the campaign and SKU of an event source
// (/seckill/{campaign}/{sku}).
func SourceSKU(source string) (campaignID, skuID string, ok bool) {
	parts := strings.Split(source, "/")
	if len(parts) != 4 || parts[0] != "" || parts[1] != "seckill" || parts[2] == "" || parts[3] == "" {
		return "", "", false
	}
	return parts[2], parts[3], true
}

// skuOf reads the campaign and SKU a reservation id names.
func skuOf(id string) (campaignID, skuID string, ok bool) {
	parts := strings.Split(id, "~")
	if len(parts) != 4 && len(parts) != 5 {
		return "", "", false
	}
	return parts[0], parts[1], parts[0] != "" && parts[1] != ""
}
