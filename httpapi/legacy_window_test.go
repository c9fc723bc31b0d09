package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/internal/skudir"
	"github.com/seckill/seckill/wal"
)

// legacyStart is the start_at of the SKU writeLegacySKU defines.
var legacyStart = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// writeLegacySKU writes, into dataDir, the log of a SKU old/s defined
// before payment_window was bounded by a day: its DEFINE has a 48 h
// window (sku.Definition.Validate takes it; ValidateNew would not).
func writeLegacySKU(t *testing.T, dataDir string) sku.Definition {
	t.Helper()
	d := sku.Definition{CampaignID: "old", SKUID: "s", StartAt: legacyStart.UnixMilli(), EndAt: legacyStart.Add(time.Hour).UnixMilli(),
		PaymentWindowMs: 48 * time.Hour.Milliseconds(), SaleLimit: 10, ReleaseOnClose: true, IDKey: [16]byte{7}}
	l, err := wal.Open(skudir.Of(dataDir, d.CampaignID, d.SKUID).WAL(), wal.Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	r := sku.Record{Type: sku.RecordDefine, At: d.StartAt, Def: d}
	if _, err := l.Append(byte(r.Type), r.AppendPayload(nil)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return d
}

// legacyFile is a campaign file of campaign old with payment_window
// window and the SKUs skus (JSON list items).
func legacyFile(t *testing.T, window, skus string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "campaigns.json")
	doc := `[{"campaign_id":"old","start_at":"2030-01-01T00:00:00Z","end_at":"2030-01-01T01:00:00Z","payment_window":"` + window + `","skus":[` + skus + `]}]`
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A SKU defined before payment_window was bounded by a day still replays,
// and a restart with the campaign file that defined it (repeating it as
// the log holds it) is accepted: the bound is sku.ValidateNew's, for a new
// definition or a change, not for a repeat. A new SKU with that window, in
// the file or in a PUT, is refused as before, naming the bound; a PUT that
// repeats the SKU is 200.
func TestCampaignFileRepeatsASKUOfAnOlderPaymentWindowBound(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old := writeLegacySKU(t, dir)
	ts := startServer(t, serverOptions{dir: dir})
	ctx := context.Background()

	cs, err := httpapi.LoadCampaigns(legacyFile(t, "48h", `{"sku_id":"s","sale_limit":10}`))
	if err != nil {
		t.Fatalf("loading the file that repeats the log: %v", err)
	}
	if _, err := httpapi.ApplyCampaignFile(ctx, ts.engine, cs, time.Now()); err != nil {
		t.Fatalf("applying the file that repeats the log: %v", err)
	}
	if got := *ts.engine.SKU("old", "s").Stats().Definition; got != old {
		t.Fatalf("the repeat changed the definition: %+v", got)
	}

	// A new SKU with the 48 h window: refused before anything is defined.
	cs, err = httpapi.LoadCampaigns(legacyFile(t, "48h", `{"sku_id":"s","sale_limit":10},{"sku_id":"new","sale_limit":5}`))
	if err == nil {
		_, err = httpapi.ApplyCampaignFile(ctx, ts.engine, cs, time.Now())
	}
	if !errors.Is(err, sku.ErrInvalidDefinition) && (err == nil || !strings.Contains(err.Error(), "payment_window")) {
		t.Fatalf("a new SKU with a 48 h payment_window: %v", err)
	}
	if _, ok := ts.engine.SKUStats("old", "new"); ok {
		t.Fatal("the refused file defined the new SKU")
	}

	repeat := map[string]any{"campaign_id": "old", "start_at": "2030-01-01T00:00:00Z", "end_at": "2030-01-01T01:00:00Z",
		"payment_window": "48h", "skus": []map[string]any{{"sku_id": "s", "sale_limit": 10}}}
	want(t, ts.admin(http.MethodPut, "/admin/campaigns/old", repeat), http.StatusOK, "")
	added := map[string]any{"campaign_id": "old", "start_at": "2030-01-01T00:00:00Z", "end_at": "2030-01-01T01:00:00Z",
		"payment_window": "48h", "skus": []map[string]any{{"sku_id": "s", "sale_limit": 10}, {"sku_id": "new", "sale_limit": 5}}}
	r := ts.admin(http.MethodPut, "/admin/campaigns/old", added)
	want(t, r, http.StatusBadRequest, "BAD_REQUEST")
	if d := r.str("detail"); !strings.Contains(d, `payment_window`) || !strings.Contains(d, `"24h"`) {
		t.Fatalf("detail %q", d)
	}
	raised := map[string]any{"campaign_id": "old", "start_at": "2030-01-01T00:00:00Z", "end_at": "2030-01-01T02:00:00Z",
		"payment_window": "48h", "skus": []map[string]any{{"sku_id": "s", "sale_limit": 10}}}
	want(t, ts.admin(http.MethodPut, "/admin/campaigns/old", raised), http.StatusBadRequest, "BAD_REQUEST")
	if got := *ts.engine.SKU("old", "s").Stats().Definition; got != old {
		t.Fatalf("a refused change changed the definition: %+v", got)
	}
}
