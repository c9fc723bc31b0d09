package cells

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/httpapi/httpapitest"
	"github.com/seckill/seckill/internal/etcdtest"
)

// TestAuditCountsACellOnlyFromThatCell: the cluster audit asks each cell
// at an address an operator gave (--cells) or a cell announced in etcd;
// when the one given for c2 is c1's (a typo, or an address taken over by
// another cell's process), the answer that comes back is c1's audit. It
// must not be counted as c2's: c2 is listed as not reached, its holdings
// as the undersell bound, and the audit is not ok. Counted, c1's 30
// reservations were added twice, c2's 5 never, and with both cells
// holding the same grant the audit said ok.
func TestAuditCountsACellOnlyFromThatCell(t *testing.T) {
	l := testLedger(t, etcdtest.Start(t).Endpoint)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m := publishTest(t, l, demo) // c1 and c2 hold 40 each
	urls := map[string]string{}
	for cell, sold := range map[string]int{"c1": 30, "c2": 5} {
		e := openCell(t, t.TempDir(), cell)
		t.Cleanup(func() { e.Close() })
		allocs, err := l.Allocations(ctx, demo, cell)
		if err != nil || len(allocs) != 1 {
			t.Fatalf("%s: allocations %v %v", cell, allocs, err)
		}
		if err := e.Grant(ctx, demo.Campaign, demo.SKU, allocs[0].SKUAllocation()); err != nil {
			t.Fatal(err)
		}
		for u := range sold {
			user := fmt.Sprintf("%s-u%d", cell, u)
			if res, err := e.Reserve(ctx, demo.Campaign, demo.SKU, "r-"+user, user); err != nil || res.Reservation.ReservationID == "" {
				t.Fatalf("%s: reserve: %+v %v", cell, res, err)
			}
		}
		urls[cell] = serveCell(t, e)
	}
	pub := Published{Definition: sku.Definition{CampaignID: demo.Campaign, SKUID: demo.SKU}, Map: m}

	a, err := AuditSKU(ctx, l, pub, urls, localToken)
	if err != nil {
		t.Fatal(err)
	}
	if !a.OK || a.Reserved != 35 || !a.Cells["c1"].Reachable || !a.Cells["c2"].Reachable {
		t.Fatalf("the audit at the right addresses: ok %v, reserved %d, problems %v", a.OK, a.Reserved, a.Problems)
	}

	urls["c2"] = urls["c1"]
	a, err = AuditSKU(ctx, l, pub, urls, localToken)
	if err != nil {
		t.Fatal(err)
	}
	c2 := a.Cells["c2"]
	if a.OK || c2.Reachable || a.Reserved != 30 || a.Unreached != 40 || !strings.Contains(c2.Error, "c1") {
		t.Fatalf("c2 asked at c1's address: ok %v, c2 reached %v (%q), reserved %d, unreached %d, problems %v",
			a.OK, c2.Reachable, c2.Error, a.Reserved, a.Unreached, a.Problems)
	}
}

// serveCell serves a cell's engine over HTTP (its admin audit) for the
// test; the URL is its base.
func serveCell(t *testing.T, e *actors.Engine) string {
	t.Helper()
	return httpapitest.Serve(t, httpapi.Config{Engine: e, AdminToken: localToken, Logger: quiet, RequestTimeout: 2 * time.Second})
}
