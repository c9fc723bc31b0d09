package httpapi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A campaign file's mistakes are named by file, line, campaign and key:
// an unquoted id that YAML 1.1 reads as a boolean or a number says to
// quote it; an unknown key names its campaign and the keys there are.
func TestCampaignFileErrorsNameTheLine(t *testing.T) {
	const head = "- campaign_id: spring\n  start_at: 2030-01-01T00:00:00Z\n  end_at: 2030-01-02T00:00:00Z\n"
	for name, c := range map[string]struct{ yaml, want string }{
		"campaign id y": {"- campaign_id: y\n  start_at: 2030-01-01T00:00:00Z\n  end_at: 2030-01-02T00:00:00Z\n  skus: [{sku_id: a, sale_limit: 3}]\n",
			`c.yaml: campaigns: line 1: campaign_id: y is read as a bool, not as the id "y" (YAML 1.1): quote it, campaign_id: "y"`},
		"sku id no": {head + "  skus:\n    - sku_id: no\n      sale_limit: 3\n",
			`line 5: sku_id: no is read as a bool`},
		"sku id number": {head + "  skus:\n    - sku_id: 1e3\n      sale_limit: 3\n",
			`line 5: sku_id: 1e3 is read as a number`},
		"unknown campaign key": {head + "  payment_windw: 15m\n  skus: [{sku_id: a, sale_limit: 3}]\n",
			`line 4: campaign "spring": unknown key "payment_windw" (the keys are campaign_id, start_at, end_at, payment_window, release_on_close, skus`},
		"unknown sku key": {head + "  skus:\n    - sku_id: a\n      limit: 3\n",
			`line 6: campaign "spring", a SKU: unknown key "limit"`},
		"not a list": {"campaign_id: spring\n", `line 1: a list of campaigns is expected`},
		"purchase limit empty": {head + "  purchase_limit: \"\"\n  skus: [{sku_id: a, sale_limit: 3}]\n",
			`c.yaml: campaigns[0] ("spring"): purchase_limit: must be "sku" or "campaign"`},
		"purchase limit null": {head + "  purchase_limit:\n  skus: [{sku_id: a, sale_limit: 3}]\n",
			`c.yaml: campaigns[0] ("spring"): purchase_limit: must be "sku" or "campaign"`},
		"purchase limit bogus": {head + "  purchase_limit: bogus\n  skus: [{sku_id: a, sale_limit: 3}]\n",
			`c.yaml: campaigns[0] ("spring"): purchase_limit: must be "sku" or "campaign"`},
		"purchase limit null, second campaign": {head + "  skus: [{sku_id: a, sale_limit: 3}]\n" +
			"- campaign_id: j1\n  start_at: 2030-01-01T00:00:00Z\n  end_at: 2030-01-02T00:00:00Z\n  purchase_limit: null\n  skus: [{sku_id: a, sale_limit: 3}]\n",
			`c.yaml: campaigns[1] ("j1"): purchase_limit: must be "sku" or "campaign"`},
		"purchase limit null, JSON": {`[{"campaign_id":"j1","start_at":"2030-01-01T00:00:00Z","end_at":"2030-01-02T00:00:00Z","purchase_limit":null,"skus":[{"sku_id":"a","sale_limit":3}]}]`,
			`c.yaml: campaigns[0] ("j1"): purchase_limit: must be "sku" or "campaign"`},
		"third SKU's sale_limit": {head + "  skus:\n    - {sku_id: a, sale_limit: 1}\n    - {sku_id: b, sale_limit: 2}\n    - {sku_id: c3, sale_limit: ten}\n",
			`c.yaml: campaigns[0] ("spring"): skus[2].sale_limit (sku_id "c3"): must be an integer from 1 to 1073741824`},
		"third SKU's sale_limit 0": {head + "  skus:\n    - {sku_id: a, sale_limit: 1}\n    - {sku_id: b, sale_limit: 2}\n    - {sku_id: c3, sale_limit: 0}\n",
			`c.yaml: campaigns[0] ("spring"): skus[2].sale_limit (sku_id "c3"): must be an integer from 1 to 1073741824`},
		"start_at not a time": {"- campaign_id: spring\n  start_at: soon\n  end_at: 2030-01-02T00:00:00Z\n  skus: [{sku_id: a, sale_limit: 3}]\n",
			`c.yaml: campaigns[0] ("spring"): start_at: must be an RFC 3339 time`},
	} {
		path := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(path, []byte(c.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadCampaigns(path)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v\nwant it to name %s and hold %q", name, err, path, c.want)
		}
	}
}

// A campaign file is one YAML document: a second one ("---" and more
// campaigns) is refused with its line, never dropped unread; a "---"
// before or after the one document changes nothing.
func TestCampaignFileIsOneDocument(t *testing.T) {
	one := "- campaign_id: c\n  start_at: 2030-01-01T00:00:00Z\n  end_at: 2030-01-02T00:00:00Z\n  skus: [{sku_id: a, sale_limit: 3}]\n"
	for _, data := range []string{one, "---\n" + one, one + "---\n", "---\n" + one + "...\n"} {
		if cs, err := ParseCampaigns([]byte(data)); err != nil || len(cs) != 1 {
			t.Errorf("%q: %v, %d campaigns", data, err, len(cs))
		}
	}
	_, err := ParseCampaigns([]byte(one + "---\n- campaign_id: d\n"))
	if err == nil || !strings.Contains(err.Error(), "line 6: a second YAML document") {
		t.Fatalf("two documents: %v", err)
	}
	// An empty first document and the list in the second: the list would
	// be dropped and nothing defined.
	if _, err := ParseCampaigns([]byte("---\n---\n" + one)); err == nil || !strings.Contains(err.Error(), "line 3: a second YAML document") {
		t.Fatalf("an empty document, then the list: %v", err)
	}
}
