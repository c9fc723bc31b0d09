package cells

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/etcdtest"
	"github.com/seckill/seckill/ledger"
)

// TestPublishCampaignScopeAtOnce: eight SKUs of one campaign-scope
// campaign published at the same instant against a real etcd, each over
// another cell map: the campaign's routing key makes the transactions
// exclude each other, so every SKU that was published shares the first
// one's map (the rest were refused ErrBadMap, or ErrContended and then
// ErrBadMap when asked again), the router reads them with the campaign's
// scope, and a SKU of the campaign with its map is published after.
func TestPublishCampaignScopeAtOnce(t *testing.T) {
	l := testLedger(t, etcdtest.Start(t).Endpoint)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := time.Now()
	def := func(skuID string) sku.Definition {
		return sku.Definition{CampaignID: "phones", SKUID: skuID, StartAt: now.UnixMilli(), EndAt: now.Add(time.Hour).UnixMilli(),
			PaymentWindowMs: 60_000, SaleLimit: 100, PurchaseLimit: sku.PurchaseLimitCampaign}
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	gate := make(chan struct{})
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, _ := EvenMap(uint64(i+1), []string{"c1", "c2"}) // eight versions: eight maps
			<-gate
			for {
				_, errs[i] = Publish(ctx, l, def(fmt.Sprintf("s%d", i)), m, 10, nil)
				if !errors.Is(errs[i], ledger.ErrContended) {
					return
				}
			}
		}()
	}
	close(gate)
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won < 0:
			won = i
		case err == nil:
			t.Fatalf("s%d and s%d both published, with map versions %d and %d", won, i, won+1, i+1)
		case !errors.Is(err, ErrBadMap):
			t.Fatalf("s%d: %v, want ErrBadMap", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no SKU published")
	}
	m, _ := EvenMap(uint64(won+1), []string{"c1", "c2"})
	if _, err := Publish(ctx, l, def("late"), m, 10, nil); err != nil {
		t.Fatalf("a SKU with the campaign's map: %v", err)
	}
	skuScope := def("plain")
	skuScope.PurchaseLimit = sku.PurchaseLimitSKU
	if _, err := Publish(ctx, l, skuScope, m, 10, nil); !errors.Is(err, sku.ErrInvalidDefinition) {
		t.Fatalf("a SKU-scope SKU in the campaign: %v", err)
	}
	pubs, err := ReadPublished(ctx, l, "")
	if err != nil || len(pubs) != 2 {
		t.Fatalf("published: %+v, %v", pubs, err)
	}
	for _, p := range pubs {
		if p.Definition.PurchaseLimit != sku.PurchaseLimitCampaign || !p.Map.Same(&m) {
			t.Fatalf("%s read back with limit %v, map version %d", p.Definition.SKUID, p.Definition.PurchaseLimit, p.Map.Version)
		}
	}
}
