package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/httpapi"
)

// A campaign PUT whose new SKUs do not fit in the engine's limit is
// refused whole, 507 TOO_MANY_SKUS, before any of its SKUs is created;
// one that fits, or redefines SKUs already there, is applied.
func TestCampaignBeyondMaxSKUsIsRefusedWhole(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{engine: func(c *actors.Config) { c.MaxSKUs = 3 }})
	a := campaign("a", "15m", map[string]int{"x": 5, "y": 5})
	ts.define(a)
	r := ts.admin(http.MethodPut, "/admin/campaigns/b", campaign("b", "15m", map[string]int{"x": 5, "y": 5}))
	want(t, r, http.StatusInsufficientStorage, "TOO_MANY_SKUS")
	if d := r.str("detail"); !strings.Contains(d, "2 new SKUs, room for 1 more") {
		t.Fatalf("detail %q does not say what fits", d)
	}
	if _, err := os.Stat(filepath.Join(ts.dir, "b")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused campaign left a folder: %v", err)
	}
	want(t, ts.get("/v1/campaigns/b/skus/x"), http.StatusNotFound, "NOT_FOUND")
	if n := ts.engine.SKUCount(); n != 2 {
		t.Fatalf("SKUCount %d after the refusal, want 2", n)
	}
	ts.define(a) // at the limit, nothing new

	// The campaign file at start is refused whole too, before any write.
	now := time.Now()
	err := httpapi.DefineCampaigns(context.Background(), ts.engine, []httpapi.Campaign{{CampaignID: "c",
		StartAt: now, EndAt: now.Add(time.Hour), SKUs: []httpapi.CampaignSKU{{SKUID: "z1", SaleLimit: 1}, {SKUID: "z2", SaleLimit: 1}}}}, now)
	if !errors.Is(err, actors.ErrTooManySKUs) {
		t.Fatalf("a campaign file beyond the limit: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ts.dir, "c")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused file left a folder: %v", err)
	}
	ts.define(campaign("b", "15m", map[string]int{"x": 5}))
}

// A campaign PUT with the admin token may carry MaxCampaignBodySize;
// without it, and on every other route, bodies stay at MaxRequestBodySize
// (the server does not read more before the token is checked).
func TestCampaignBodyLimit(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{config: func(c *httpapi.Config) { c.MaxRequestBodySize = 512 }})
	skus := map[string]int{}
	for i := range 12 {
		skus[fmt.Sprintf("sku-%02d", i)] = 1
	}
	body := campaign("big", "15m", skus) // ~600 bytes
	ts.define(body)
	r := call(t, http.MethodPut, ts.base+"/admin/campaigns/big", body, map[string]string{"Authorization": "Bearer wrong"})
	want(t, r, http.StatusRequestEntityTooLarge, "BODY_TOO_LARGE")
	if d := r.str("detail"); d != "request body larger than 512 bytes" {
		t.Fatalf("detail %q", d)
	}
	big := fmt.Sprintf(`{"request_id":"r-1","user_id":"%s"}`, strings.Repeat("u", 600))
	r = call(t, http.MethodPost, ts.base+"/v1/campaigns/big/skus/sku-01/reservations", big, map[string]string{"Authorization": "Bearer " + testToken})
	want(t, r, http.StatusRequestEntityTooLarge, "BODY_TOO_LARGE")
}
