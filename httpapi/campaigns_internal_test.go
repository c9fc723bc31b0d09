package httpapi

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/timefmt"
)

func TestParseCampaignsJSONAndYAML(t *testing.T) {
	js := `[{"campaign_id":"c1","start_at":"2030-01-01T00:00:00Z","end_at":"2030-01-02T00:00:00Z",
	        "payment_window":"2m","release_on_close":false,"skus":[{"sku_id":"a","sale_limit":3},{"sku_id":"b","sale_limit":4}]}]`
	yml := `
- campaign_id: c1
  start_at: "2030-01-01T00:00:00Z"
  end_at: "2030-01-02T00:00:00Z"
  payment_window: 2m
  release_on_close: false
  skus:
    - {sku_id: a, sale_limit: 3}
    - {sku_id: b, sale_limit: 4}
`
	for name, data := range map[string]string{"json": js, "yaml": yml} {
		cs, err := ParseCampaigns([]byte(data))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		defs, err := cs[0].Definitions()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := sku.Definition{CampaignID: "c1", SKUID: "b", StartAt: 1893456000000, EndAt: 1893542400000,
			PaymentWindowMs: 120000, SaleLimit: 4, ReleaseOnClose: false}
		if len(defs) != 2 || defs[1] != want {
			t.Fatalf("%s: %+v", name, defs)
		}
	}
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	if cs, err := LoadCampaigns(path); err != nil || len(cs) != 1 {
		t.Fatalf("LoadCampaigns: %v %v", cs, err)
	}
}

func TestParseCampaignsRefuses(t *testing.T) {
	base := `{"campaign_id":"c","start_at":"2030-01-01T00:00:00Z","end_at":"2030-01-02T00:00:00Z","skus":[{"sku_id":"a","sale_limit":3}]}`
	for name, data := range map[string]string{
		"not a list":      base,
		"unknown field":   `[{"campaign_id":"c","bogus":1}]`,
		"wrong case":      `[{"campaign_id":"c","start_at":"2030-01-01T00:00:00Z","end_at":"2030-01-02T00:00:00Z","skus":[{"SKU_ID":"a","sale_limit":3}]}]`,
		"repeated key":    `[{"campaign_id":"c","start_at":"2030-01-01T00:00:00Z","end_at":"2030-01-02T00:00:00Z","skus":[{"sku_id":"a","sale_limit":3,"sale_limit":4}]}]`,
		"repeated (YAML)": "- campaign_id: c\n  campaign_id: d\n  start_at: 2030-01-01T00:00:00Z\n  end_at: 2030-01-02T00:00:00Z\n  skus: [{sku_id: a, sale_limit: 3}]\n",
		"no skus":         `[{"campaign_id":"c","start_at":"2030-01-01T00:00:00Z","end_at":"2030-01-02T00:00:00Z","skus":[]}]`,
		"no start":        `[{"campaign_id":"c","end_at":"2030-01-02T00:00:00Z","skus":[{"sku_id":"a","sale_limit":3}]}]`,
		"end before":      `[{"campaign_id":"c","start_at":"2030-01-02T00:00:00Z","end_at":"2030-01-01T00:00:00Z","skus":[{"sku_id":"a","sale_limit":3}]}]`,
		"bad window":      `[{"campaign_id":"c","start_at":"2030-01-01T00:00:00Z","end_at":"2030-01-02T00:00:00Z","payment_window":"soon","skus":[{"sku_id":"a","sale_limit":3}]}]`,
		"zero limit":      `[{"campaign_id":"c","start_at":"2030-01-01T00:00:00Z","end_at":"2030-01-02T00:00:00Z","skus":[{"sku_id":"a","sale_limit":0}]}]`,
		"bad id":          `[{"campaign_id":"c d","start_at":"2030-01-01T00:00:00Z","end_at":"2030-01-02T00:00:00Z","skus":[{"sku_id":"a","sale_limit":3}]}]`,
		"duplicate sku":   `[{"campaign_id":"c","start_at":"2030-01-01T00:00:00Z","end_at":"2030-01-02T00:00:00Z","skus":[{"sku_id":"a","sale_limit":3},{"sku_id":"a","sale_limit":3}]}]`,
		"duplicate camp.": "[" + base + "," + base + "]",
		// The second document's campaigns would be dropped unread.
		"two documents": "- campaign_id: c\n  start_at: 2030-01-01T00:00:00Z\n  end_at: 2030-01-02T00:00:00Z\n  skus: [{sku_id: a, sale_limit: 3}]\n---\n- campaign_id: d\n  start_at: 2030-01-01T00:00:00Z\n  end_at: 2030-01-02T00:00:00Z\n  skus: [{sku_id: a, sale_limit: 3}]\n",
	} {
		if _, err := ParseCampaigns([]byte(data)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestDemoCampaign(t *testing.T) {
	now := time.Date(2030, 5, 1, 12, 0, 0, 123456789, time.UTC)
	defs, err := DemoCampaign(now).Definitions()
	if err != nil || len(defs) != 1 {
		t.Fatal(defs, err)
	}
	d := defs[0]
	if d.CampaignID != "demo" || d.SKUID != "sku-1" || d.SaleLimit != 10_000 || d.StartAt != now.UnixMilli() ||
		d.EndAt-d.StartAt != 24*3600*1000 || d.PaymentWindowMs != 15*60*1000 || !d.ReleaseOnClose {
		t.Fatalf("demo: %+v", d)
	}
}

// Durations are shown in their canonical text, and read back as they were.
func TestFormatDuration(t *testing.T) {
	for ms, want := range map[int64]string{
		15 * 60_000: "15m", 3_600_000: "1h", 5_400_000: "1h30m", 90_000: "1m30s", 1_500: "1.5s",
		250: "250ms", 86_400_000: "24h", 3_661_000: "1h1m1s", 61_500: "1m1.5s", 1: "1ms",
	} {
		got := timefmt.Duration(ms)
		d, err := time.ParseDuration(got)
		if got != want || err != nil || d.Milliseconds() != ms {
			t.Errorf("%d ms: %q (%v, %v), want %q", ms, got, d, err, want)
		}
	}
}

// The view of the demo campaign: its definition, durations in their
// canonical text.
func TestCampaignView(t *testing.T) {
	c := DemoCampaign(time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC))
	defs, _ := c.Definitions()
	views := campaignsOf([]actors.Stats{{CampaignID: "demo", SKUID: "sku-1", Definition: &defs[0]}}, "demo")
	want := campaignBody{CampaignID: "demo", PurchaseLimit: "sku", SKUs: []campaignSKU{{SKUID: "sku-1", SaleLimit: 10_000,
		StartAt: "2030-05-01T12:00:00.000Z", EndAt: "2030-05-02T12:00:00.000Z", PaymentWindow: "15m", ReleaseOnClose: true}}}
	if len(views) != 1 || !reflect.DeepEqual(views[0], want) {
		t.Fatalf("view %+v\nwant %+v", views, want)
	}
}

func TestClassify(t *testing.T) {
	if f := classify(errors.Join(errors.New("x"), sku.ErrBadReservationID)); StatusOf(f.reason) != 404 {
		t.Fatalf("%+v", f)
	}
	if f := classify(errors.New("disk on fire")); StatusOf(f.reason) != 500 || f.reason != reasonInternal {
		t.Fatalf("%+v", f)
	}
	if f := classify(fmt.Errorf("reserve: %w", actors.ErrBusy)); StatusOf(f.reason) != 429 || f.reason != reasonQueueFull {
		t.Fatalf("a full SKU inbox: %+v", f)
	}
	if !strings.HasPrefix(timefmt.Millis(1893456000123), "2030-01-01T00:00:00.123Z") {
		t.Fatal(timefmt.Millis(1893456000123))
	}
}

// campaignJSON carries every field of Campaign, under the same JSON names.
func TestCampaignJSONHasCampaignsFields(t *testing.T) {
	names := func(v any) map[string]bool {
		out := map[string]bool{}
		typ := reflect.TypeOf(v)
		for i := 0; i < typ.NumField(); i++ {
			out[strings.Split(typ.Field(i).Tag.Get("json"), ",")[0]] = true
		}
		return out
	}
	if a, b := names(Campaign{}), names(campaignJSON{}); !reflect.DeepEqual(a, b) {
		t.Fatalf("Campaign %v, campaignJSON %v", a, b)
	}
}
