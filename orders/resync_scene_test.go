package orders_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/orders"
	"github.com/seckill/seckill/orders/orderstest"
)

// resyncScene is the sale of the resync tests: a seckilld that truncates
// its logs past a slow consumer (a snapshot every 10 records, one kept,
// 120 records of feed retained, whole 512-byte segments removed), a
// campaign of orderstest.SKUs open since a minute ago with 15 minutes to
// pay, and three consumers' databases: followed, whose consumer reads
// 1,000 events a page and is kept within the retained records so that it
// never needs the export (its rows are the events'); returned, whose
// consumer reads 50 a page and is stopped by the test; fresh, which the
// test starts later.
type resyncScene struct {
	c                         *client.Client
	engine                    *actors.Engine
	campaignID                string
	followed, returned, fresh string
	follower                  *prometheus.Registry
	stopReturned              func()
}

func newResyncScene(t *testing.T, campaignID string, releaseOnClose bool) *resyncScene {
	cfg := actors.Config{DataDir: t.TempDir(), SnapshotEvery: 10, SnapshotKeep: 1, FeedRetainRecords: 120}
	cfg.WAL.SegmentSize = 512
	s := &resyncScene{campaignID: campaignID}
	s.c, s.engine = orderstest.SeckillOn(t, cfg)
	start := time.Now().Add(-time.Minute).Truncate(time.Second)
	skus := make([]client.CampaignSKU, len(orderstest.SKUs))
	for i, sku := range orderstest.SKUs {
		skus[i] = client.CampaignSKU{SKUID: sku, SaleLimit: 20000}
	}
	if err := s.c.PutCampaign(context.Background(), client.Campaign{CampaignID: campaignID, StartAt: start, EndAt: start.Add(time.Hour),
		PaymentWindow: 15 * time.Minute, ReleaseOnClose: releaseOnClose, SKUs: skus}); err != nil {
		t.Fatal(err)
	}
	s.followed, s.returned, s.fresh = orderstest.Database(t), orderstest.Database(t), orderstest.Database(t)
	s.follower, _ = orderstest.Consume(t, s.followed, s.src(1000))
	_, s.stopReturned = orderstest.Consume(t, s.returned, s.src(50))
	return s
}

// src is the campaign's feed read limit events a page.
func (s *resyncScene) src(limit int) *orders.FeedSource {
	return &orders.FeedSource{Client: s.c, CampaignID: s.campaignID, Limit: limit, Wait: time.Second}
}

// reserve reserves for buyers from..to-1 (user u<i>, request r<i>, on the
// SKUs in turn) and returns their reservation ids.
func (s *resyncScene) reserve(t *testing.T, from, to int) []string {
	t.Helper()
	ids := make([]string, 0, to-from)
	for i := from; i < to; i++ {
		r, err := s.c.Reserve(context.Background(), client.ReserveRequest{CampaignID: s.campaignID,
			SKUID: orderstest.SKUs[i%len(orderstest.SKUs)], UserID: fmt.Sprint("u", i), RequestID: fmt.Sprint("r", i)})
		if err != nil {
			t.Fatalf("buyer %d: reserve: %v", i, err)
		}
		ids = append(ids, r.ReservationID)
	}
	return ids
}
