package orders_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/orders"
	"github.com/seckill/seckill/orders/orderstest"
)

// A service started again with a wrong admin token, from a saved cursor,
// first checks the events it applied against the feed (FeedSource.Check):
// the feed's 401 there is a refusal an operator must fix, as it is for a
// new consumer's first page, so Run stops with ErrPosition (seckill-orders
// exits 1) instead of retrying the check for ever.
func TestAWrongTokenStopsAServiceResumingFromItsCursor(t *testing.T) {
	ctx := context.Background()
	db := orderstest.Database(t)
	c := orderstest.Seckill(t)
	orderstest.Define(t, c, "tok", 20)
	orderstest.Sale(t, c, "tok", 0, 10)
	_, stop := orderstest.Consume(t, db, &orders.FeedSource{Client: c, CampaignID: "tok", Limit: 7, Wait: time.Second})
	orderstest.WaitClean(t, c, db, "tok")
	stop()

	wrong, err := client.New(client.Options{BaseURL: c.BaseURL(), AdminToken: "not-the-token"})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	src := &orders.FeedSource{Client: wrong, CampaignID: "tok", Limit: 7, Wait: time.Second}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = orders.Run(rctx, src, orders.NewStore(pool), orders.NewMetrics(prometheus.NewRegistry()), orderstest.Quiet)
	if !errors.Is(err, orders.ErrPosition) || !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("Run with a wrong token from a saved cursor returned %v (context: %v), want ErrPosition wrapping the feed's 401", err, rctx.Err())
	}
	t.Logf("%v", err)
}
