package reconcile

import (
	"context"
	"fmt"
	"strings"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/orders"
)

// NameEvents reads, for every difference about a reservation of r, the
// reservation's events from its SKU's feed (feedOf(cell): the server, or
// the cell the reservation id names; one read of each SKU's feed) and
// makes its repair the re-delivery of exactly those events by their id
// (seckill-orders redeliver --source S --event IDS). A reservation whose
// creation the feed no longer holds gets the export as its repair.
func NameEvents(ctx context.Context, r *Report, feedOf func(cell string) (*client.Client, error)) error {
	type feedKey struct{ cell, sku string }
	wanted := map[feedKey]map[string]bool{}
	for _, d := range r.Differences {
		if !fromFeed(d) {
			continue
		}
		k := feedKey{sku.ReservationCell(d.ReservationID), d.SKUID}
		if wanted[k] == nil {
			wanted[k] = map[string]bool{}
		}
		wanted[k][d.ReservationID] = true
	}
	events := map[string][]client.Event{}
	for k, ids := range wanted {
		c, err := feedOf(k.cell)
		if err != nil {
			return err
		}
		byID, err := orders.ReservationEvents(ctx, c, r.CampaignID, k.sku, ids)
		if err != nil {
			return err
		}
		for id, es := range byID {
			events[id] = es
		}
	}
	for i := range r.Differences {
		d := &r.Differences[i]
		if !fromFeed(*d) {
			continue
		}
		es := events[d.ReservationID]
		if len(es) == 0 {
			d.Repair = strings.Replace(d.Repair, redeliver(d.ReservationID), fmt.Sprintf(
				"the feed no longer holds reservation %s's creation (compacted past it): take its row from the export, GET /admin/campaigns/%s/skus/%s/reservations",
				d.ReservationID, r.CampaignID, d.SKUID), 1)
			continue
		}
		d.Source = es[0].Source
		d.Events = make([]string, len(es))
		for j, e := range es {
			d.Events[j] = e.ID
		}
		d.Repair = strings.Replace(d.Repair, redeliver(d.ReservationID), redeliverEvents(d.ReservationID, d.Source, d.Events), 1)
	}
	return nil
}

// redeliverEvents is the repair of an order that lacks some of its
// reservation's events, by their ids.
func redeliverEvents(id, source string, events []string) string {
	return "re-deliver reservation " + id + "'s events: seckill-orders redeliver --source " + source + " --event " + strings.Join(events, ",") +
		" (applies them again in log order, whether or not order_events has them; an event applied before changes nothing)"
}
