package orders_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/orders"
	"github.com/seckill/seckill/orders/orderstest"
)

// FetchEvent reads exactly the event named by source and id, the first of
// a log (index 1) included, from the first server whose feed holds it; an
// event no feed holds is ErrNoEvent (another SKU's history: that feed's
// 400 BAD_CURSOR, a server without the SKU: its 404), and a malformed
// name is an error that says what is expected.
func TestFetchEvent(t *testing.T) {
	a, b := orderstest.Seckill(t), orderstest.Seckill(t) // b plays a cell without the campaign
	orderstest.Define(t, a, "fe", 10)
	orderstest.Sale(t, a, "fe", 0, 6)
	ctx := context.Background()
	page, err := a.Feed(ctx, client.FeedRequest{CampaignID: "fe", SKUID: orderstest.SKUs[0]})
	if err != nil || len(page.Events) < 3 {
		t.Fatalf("feed: %v, %+v", err, page)
	}
	other, err := a.Feed(ctx, client.FeedRequest{CampaignID: "fe", SKUID: orderstest.SKUs[1], Limit: 1})
	if err != nil || len(other.Events) != 1 {
		t.Fatalf("feed of %s: %v", orderstest.SKUs[1], err)
	}
	source := page.Events[0].Source
	for _, want := range []client.Event{page.Events[0], page.Events[2]} {
		got, err := orders.FetchEvent(ctx, []*client.Client{b, a}, source, want.ID)
		if err != nil || got.ID != want.ID || string(got.Raw) != string(want.Raw) {
			t.Fatalf("event %s: got %s (%v)", want.ID, got.Raw, err)
		}
	}
	history, _, _ := strings.Cut(page.Events[0].ID, "-")
	for _, id := range []string{history + "-999999", other.Events[0].ID} {
		if _, err := orders.FetchEvent(ctx, []*client.Client{b, a}, source, id); !errors.Is(err, orders.ErrNoEvent) {
			t.Fatalf("event %s of %s: %v, want ErrNoEvent", id, source, err)
		}
	}
	for _, c := range [][2]string{{source, "nohyphen"}, {source, history + "-0"}, {"/seckill/fe", page.Events[0].ID}} {
		if _, err := orders.FetchEvent(ctx, []*client.Client{a}, c[0], c[1]); err == nil || errors.Is(err, orders.ErrNoEvent) {
			t.Fatalf("source %q id %q: %v, want a malformed-name error", c[0], c[1], err)
		}
	}
}
