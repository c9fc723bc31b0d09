package cells

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/httpapi/httpapitest"
	"github.com/seckill/seckill/internal/etcdtest"
	"github.com/seckill/seckill/ledger"
)

const localToken = "local-test-token"

// testCell is one cell's engine behind its guard and HTTP service, with
// no published SKU at start.
type testCell struct {
	engine *actors.Engine
	guard  *Guard
	url    string
}

func startTestCell(t *testing.T, l *ledger.Ledger, cell string) *testCell {
	t.Helper()
	e, err := actors.Open(actors.Config{DataDir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	g := NewGuard(e, cell, nil, l)
	url := httpapitest.Serve(t, httpapi.Config{Engine: g, Claimer: g, CellGuard: g, AdminToken: localToken, Logger: quiet, RequestTimeout: 2 * time.Second})
	return &testCell{engine: e, guard: g, url: url}
}

// localTestStart is the time the campaigns' windows of these tests are
// set around, read once: a PUT repeated in the next second must state
// the same start_at.
var localTestStart = time.Now().UTC().Truncate(time.Second)

// put PUTs campaign c with one SKU per sale limit of skus (purchase_limit
// limit, "" for the default) and returns the status, the error reason and
// Retry-After.
func (c *testCell) put(t *testing.T, campaign, limit string, skus map[string]uint32) (int, string, string) {
	t.Helper()
	now := localTestStart // one window for every PUT: a redefinition may not move start_at
	body := map[string]any{"campaign_id": campaign, "start_at": now.Add(-time.Hour).Format(time.RFC3339),
		"end_at": now.Add(time.Hour).Format(time.RFC3339)}
	if limit != "" {
		body["purchase_limit"] = limit // absent means "sku"; "" is refused
	}
	var list []map[string]any
	for s, n := range skus {
		list = append(list, map[string]any{"sku_id": s, "sale_limit": n})
	}
	body["skus"] = list
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPut, c.url+"/admin/campaigns/"+campaign, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+localToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Error  string `json:"error"`
		Detail string `json:"detail"`
	}
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out.Error, resp.Header.Get("Retry-After")
}

// has reports whether the engine knows a SKU of campaign.
func (c *testCell) has(campaign string) bool {
	for _, st := range c.engine.AllStats() {
		if st.CampaignID == campaign {
			return true
		}
	}
	return false
}

func publishDef(campaign, skuID string, limit sku.PurchaseLimit, saleLimit uint32) sku.Definition {
	now := time.Now()
	return sku.Definition{CampaignID: campaign, SKUID: skuID, StartAt: now.Add(-time.Hour).UnixMilli(), EndAt: now.Add(time.Hour).UnixMilli(),
		PaymentWindowMs: 60_000, SaleLimit: saleLimit, ReleaseOnClose: true, PurchaseLimit: limit}
}

// TestLocalOrPublished: a campaign is local to one cell or published
// across cells, never both, against a real etcd and two cells' HTTP
// services:
//   - dd defined on c1 through its admin API (sale_limit 5), then
//     published over c1 and c2 (sale_limit 10, 4 up front each, chunks of
//     1): the publish is refused naming c1, nothing is published, and 30
//     users at c1 get exactly 5 reserves (it sold 11 before);
//   - ee (purchase_limit campaign, SKU a) on c1, then ee/c published over
//     c1 and c2: refused alike (c2 held ee with purchase_limit sku);
//   - ff published first: a PUT of ff at c1 or c2 answers 409
//     CAMPAIGN_PUBLISHED and defines nothing, also once c1 guards it;
//   - dd PUT at c2 while c1 holds it: 409 CAMPAIGN_ON_OTHER_CELL, nothing
//     defined; c1 redefines dd (a higher sale_limit): 200.
func TestLocalOrPublished(t *testing.T) {
	l := testLedger(t, etcdtest.Start(t).Endpoint)
	c1, c2 := startTestCell(t, l, "c1"), startTestCell(t, l, "c2")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, _ := EvenMap(1, []string{"c1", "c2"})
	grants := []ledger.InitialGrant{{Cell: "c1", Units: 4}, {Cell: "c2", Units: 4}}

	// Repro A.
	if code, reason, _ := c1.put(t, "dd", "", map[string]uint32{"a": 5}); code != http.StatusCreated {
		t.Fatalf("PUT dd at c1: %d %s", code, reason)
	}
	_, err := Publish(ctx, l, publishDef("dd", "a", sku.PurchaseLimitSKU, 10), m, 1, grants)
	var local *ledger.LocalError
	if !errors.As(err, &local) || local.Cell != "c1" || local.Campaign != "dd" {
		t.Fatalf("publish dd/a over a local dd: %v, want a LocalError naming c1", err)
	}
	if pubs, err := ReadPublished(ctx, l, ""); err != nil || len(pubs) != 0 {
		t.Fatalf("published after a refused publish: %+v %v", pubs, err)
	}
	if ps, err := l.Read(ctx, ledger.SKU{Campaign: "dd", SKU: "a"}); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("a ledger for dd/a after a refused publish: %+v %v", ps, err)
	}
	accepted := 0
	for u := range 30 {
		res, err := c1.guard.ReserveWith(ctx, "dd", "a", fmt.Sprintf("r%d", u), fmt.Sprintf("u%d", u), sku.Holder{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome == sku.OutcomeAccepted {
			accepted++
		}
	}
	if accepted != 5 {
		t.Fatalf("%d reserves of dd/a accepted, sale_limit 5", accepted)
	}

	// Repro B.
	if code, reason, _ := c1.put(t, "ee", "campaign", map[string]uint32{"a": 5}); code != http.StatusCreated {
		t.Fatalf("PUT ee at c1: %d %s", code, reason)
	}
	if _, err := Publish(ctx, l, publishDef("ee", "c", sku.PurchaseLimitSKU, 10), m, 1, grants); !errors.As(err, &local) || local.Cell != "c1" {
		t.Fatalf("publish ee/c over a local ee: %v", err)
	}
	if _, err := Publish(ctx, l, publishDef("ee", "c", sku.PurchaseLimitCampaign, 10), m, 1, grants); !errors.As(err, &local) || local.Cell != "c1" {
		t.Fatalf("publish ee/c (campaign scope) over a local ee: %v", err)
	}

	// Published first, then a local PUT.
	if _, err := Publish(ctx, l, publishDef("ff", "a", sku.PurchaseLimitSKU, 10), m, 1, grants); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*testCell{c1, c2} {
		if code, reason, _ := c.put(t, "ff", "", map[string]uint32{"b": 5}); code != http.StatusConflict || reason != "CAMPAIGN_PUBLISHED" || c.has("ff") {
			t.Fatalf("PUT ff at a cell after its publish: %d %s (defined: %v)", code, reason, c.has("ff"))
		}
	}
	pubs, err := ReadPublished(ctx, l, "c1")
	if err != nil || len(pubs) != 1 {
		t.Fatalf("published: %+v %v", pubs, err)
	}
	c1.guard.Add(pubs[0])
	if err := c1.guard.ClaimCampaign(ctx, "ff"); !errors.Is(err, httpapi.ErrCampaignPublished) {
		t.Fatalf("claim of a campaign the guard holds: %v", err)
	}
	if errs := c1.guard.DefineAll(ctx, []sku.Definition{publishDef("ff", "b", sku.PurchaseLimitSKU, 5)}, 0); !errors.Is(errs[0], httpapi.ErrCampaignPublished) || c1.has("ff") {
		t.Fatalf("DefineAll through the guard of a published campaign: %v", errs)
	}

	// A second cell.
	if code, reason, _ := c2.put(t, "dd", "", map[string]uint32{"a": 5}); code != http.StatusConflict || reason != "CAMPAIGN_ON_OTHER_CELL" || c2.has("dd") {
		t.Fatalf("PUT dd at c2 while c1 holds it: %d %s (defined: %v)", code, reason, c2.has("dd"))
	}
	if code, reason, _ := c1.put(t, "dd", "", map[string]uint32{"a": 6}); code != http.StatusOK {
		t.Fatalf("PUT dd again at c1: %d %s", code, reason)
	}
}

// TestLocalDefineEtcdDown: with etcd unreachable, a cell's admin PUT of a
// new campaign answers 503 LEDGER_UNREACHABLE with Retry-After and
// defines nothing; once etcd answers, the same PUT defines it.
func TestLocalDefineEtcdDown(t *testing.T) {
	srv := etcdtest.Start(t)
	proxy, err := etcdtest.NewProxy(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	l := testLedger(t, proxy.Addr)
	c1 := startTestCell(t, l, "c1")
	proxy.Cut()
	code, reason, retry := c1.put(t, "gg", "", map[string]uint32{"a": 5})
	if code != http.StatusServiceUnavailable || reason != "LEDGER_UNREACHABLE" || retry == "" || c1.has("gg") {
		t.Fatalf("PUT with etcd cut off: %d %s Retry-After %q (defined: %v)", code, reason, retry, c1.has("gg"))
	}
	proxy.Heal()
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, reason, _ = c1.put(t, "gg", "", map[string]uint32{"a": 5})
		if code == http.StatusCreated || time.Now().After(deadline) {
			break
		}
	}
	if code != http.StatusCreated || !c1.has("gg") {
		t.Fatalf("PUT once etcd answers: %d %s", code, reason)
	}
}
