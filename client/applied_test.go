package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/seckill/seckill/client"
)

// CheckApplied takes the events the feed holds, also with their data
// encoded anew (as PostgreSQL's jsonb stores it). Events the feed holds
// another record for (a later decision: a copy's record at the same
// index) are a 409 CURSOR_DIVERGED of the SKU, without a history, whose
// fork index is the last event applied that the feed still holds, or the
// index before the first applied when it holds none.
func TestCheckApplied(t *testing.T) {
	c, err := client.New(client.Options{BaseURL: seckilld, AdminToken: adminToken})
	if err != nil {
		t.Fatal(err)
	}
	defineSale(c, "checked", 10, false)
	ctx := context.Background()
	for i := range 6 {
		if _, err := c.Reserve(ctx, client.ReserveRequest{CampaignID: "checked", SKUID: "phone", UserID: fmt.Sprint("u", i), RequestID: fmt.Sprint("r", i)}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := c.Feed(ctx, client.FeedRequest{CampaignID: "checked", SKUID: "phone"})
	if err != nil || len(page.Events) != 7 {
		t.Fatalf("feed: %v, %d events", err, len(page.Events))
	}
	applied := func(events []client.Event) client.Applied {
		last := events[len(events)-1]
		return client.Applied{CampaignID: "checked", SKUID: "phone", Last: last, LastAt: last.SeckillIndex,
			From: func(_ context.Context, p uint64) (client.Event, uint64, bool, error) {
				for _, e := range events {
					if e.SeckillIndex >= p {
						return e, e.SeckillIndex, true, nil
					}
				}
				return client.Event{}, 0, false, nil
			}}
	}
	stored := make([]client.Event, len(page.Events))
	for i, e := range page.Events {
		var data map[string]any
		if err := json.Unmarshal(e.Data, &data); err != nil {
			t.Fatal(err)
		}
		e.Data, _ = json.MarshalIndent(data, "", "  ")
		stored[i] = e
	}
	if err := c.CheckApplied(ctx, applied(stored)); err != nil {
		t.Fatalf("the events the feed holds: %v", err)
	}
	later := func(from int) []client.Event {
		events := append([]client.Event(nil), stored...)
		for i := from; i < len(events); i++ {
			events[i].Time = events[i].Time.Add(time.Millisecond)
		}
		return events
	}
	for from, fork := range map[int]uint64{4: stored[3].SeckillIndex, 1: stored[0].SeckillIndex, 0: stored[0].SeckillIndex - 1} {
		err := c.CheckApplied(ctx, applied(later(from)))
		var e *client.Error
		if !errors.Is(err, client.ErrCursorDiverged) || !errors.As(err, &e) || e.SKUID != "phone" || e.ForkIndex != fork || e.History != "" {
			t.Fatalf("events from the %dth on decided later: %v (%+v), want a 409 of phone at %d", from, err, e, fork)
		}
	}
}
