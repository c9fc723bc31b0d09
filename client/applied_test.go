package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
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

// After a restore to an earlier point the feed refuses a position past
// the fork with a 409 naming the fork and the restored log's history, and
// serves the restored log's records after the fork under that history.
// CheckApplied returns that 409, whether the last event applied is well
// past the fork (its position refused) or just after it (the feed holds
// the restored log's record at its index); a bisection would name an
// older copy, without the history the reanchor follows.
func TestCheckAppliedAfterARestore(t *testing.T) {
	const before, after, fork = "00000000000000aa", "00000000000000bb", 4
	event := func(history string, index uint64) client.Event {
		return client.Event{SpecVersion: "1.0", ID: fmt.Sprintf("%s-%d", history, index), Source: "/seckill/c/phone",
			Type: client.TypeReservationCreated, Subject: fmt.Sprint("c~phone~", index), Time: time.UnixMilli(int64(index)).UTC(),
			SeckillIndex: index, Data: json.RawMessage(fmt.Sprintf(`{"reservation_id":"c~phone~%d"}`, index))}
	}
	s := &script{answer: func(_ int, r *http.Request) (int, map[string]string, string) {
		var index uint64
		if _, err := fmt.Sscanf(strings.TrimPrefix(r.URL.Query().Get("after"), before+"-"), "%d", &index); err != nil {
			return http.StatusBadRequest, nil, `{"error":"BAD_CURSOR","detail":"not this SKU's"}`
		}
		if index > fork {
			return http.StatusConflict, nil, fmt.Sprintf(`{"error":"CURSOR_DIVERGED","detail":"restored","fork_index":%d,"history":%q,"sku_id":"phone"}`, fork, after)
		}
		next := event(before, index+1)
		if next.SeckillIndex > fork {
			next = event(after, index+1)
		}
		page, _ := json.Marshal(client.FeedPage{Events: []client.Event{next}, NextCursor: next.ID, FirstIndex: 1, DurableIndex: 9})
		return http.StatusOK, nil, string(page)
	}}
	c, err := client.New(client.Options{BaseURL: serve(t, s).URL, AdminToken: adminToken})
	if err != nil {
		t.Fatal(err)
	}
	for _, last := range []uint64{fork + 3, fork + 1} {
		var events []client.Event
		for i := uint64(1); i <= last; i++ {
			events = append(events, event(before, i))
		}
		err := c.CheckApplied(context.Background(), client.Applied{CampaignID: "c", SKUID: "phone", Last: events[last-1], LastAt: last,
			From: func(_ context.Context, p uint64) (client.Event, uint64, bool, error) {
				if p < 1 || p > last {
					return client.Event{}, 0, false, nil
				}
				return events[p-1], p, true, nil
			}})
		var e *client.Error
		if !errors.Is(err, client.ErrCursorDiverged) || !errors.As(err, &e) || e.SKUID != "phone" || e.ForkIndex != fork || e.History != after {
			t.Fatalf("events applied up to %d, the SKU restored after %d: %v (%+v), want the feed's 409 with history %s", last, fork, err, e, after)
		}
	}
}
