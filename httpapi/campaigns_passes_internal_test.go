package httpapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
)

// The campaign's entry-pass fields, in YAML and JSON, into every SKU's
// definition and back; their bounds.
func TestCampaignPassFields(t *testing.T) {
	yml := `
- campaign_id: c1
  start_at: "2030-01-01T00:00:00Z"
  end_at: "2030-01-02T00:00:00Z"
  payment_window: 10m
  entry_pass: {required: true, lead: 20m, ttl: 5m}
  max_unpaid_per_subject: 2
  payment_window_high_risk: 3m
  skus: [{sku_id: a, sale_limit: 3}]
`
	cs, err := ParseCampaigns([]byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	defs, err := cs[0].Definitions()
	if err != nil {
		t.Fatal(err)
	}
	d := defs[0]
	if d.EntryPass != (sku.EntryPassRule{Required: true, LeadMs: 20 * 60_000, TTLMs: 5 * 60_000}) ||
		d.MaxUnpaidPerSubject != 2 || d.PaymentWindowHighRiskMs != 3*60_000 {
		t.Fatalf("%+v", d)
	}
	view := func(defs []sku.Definition) campaignSKU {
		return campaignsOf([]actors.Stats{{CampaignID: "c1", SKUID: "a", Definition: &defs[0]}}, "c1")[0].SKUs[0]
	}
	v := view(defs)
	if *v.EntryPass != (CampaignEntryPass{Required: true, Lead: "20m", TTL: "5m"}) || v.MaxUnpaidPerSubject != 2 || v.PaymentWindowHighRisk != "3m" ||
		v.PaymentWindow != "10m" {
		t.Fatalf("the view of the fields: %+v", v)
	}
	// Without the fields: none set, none shown.
	plain := strings.NewReplacer("  entry_pass: {required: true, lead: 20m, ttl: 5m}\n", "",
		"  max_unpaid_per_subject: 2\n", "", "  payment_window_high_risk: 3m\n", "").Replace(yml)
	cs, err = ParseCampaigns([]byte(plain))
	if err != nil {
		t.Fatal(err)
	}
	defs, _ = cs[0].Definitions()
	if js, _ := json.Marshal(view(defs)); strings.Contains(string(js), "entry_pass") || strings.Contains(string(js), "high_risk") ||
		strings.Contains(string(js), "max_unpaid") {
		t.Fatalf("unset fields shown: %s", js)
	}
	for _, bad := range []string{
		"  payment_window_high_risk: 11m\n", // longer than payment_window
		"  payment_window_high_risk: soon\n",
		"  entry_pass: {lead: 0s}\n",
		"  entry_pass: {ttl: 25h}\n",
		"  entry_pass: {required: true, ttll: 5m}\n", // misspelled
		"  max_unpaid_per_subject: -1\n",
	} {
		doc := strings.Replace(plain, "  skus:", bad+"  skus:", 1)
		if _, err := ParseCampaigns([]byte(doc)); err == nil {
			t.Errorf("accepted: %q", bad)
		}
	}
}
