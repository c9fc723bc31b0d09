package httpapi_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/cmd/seckilld/seckilldtest"
)

// A campaign PUT of many SKUs cut by kill -9 in its middle (some SKUs
// defined, not all) is whole after the restart, without the PUT being
// repeated: the PUT's definitions were durable as pending before its
// first SKU, and the start finishes them before /readyz says ready
// (docs/operating.md, "A campaign PUT is all or nothing across a crash").
// A PUT repeated then is 200 and changes nothing.
func TestCampaignPutCutByKillIsWholeAfterRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the seckilld binary")
	}
	t.Parallel()
	bin := seckilldtest.Build(t, raceEnabled)
	dir := t.TempDir()
	const n = 300
	auth := map[string]string{"Authorization": "Bearer " + testToken}
	skuCount := func(base, campaignID string) int {
		r := call(t, http.MethodGet, base+"/admin/campaigns/"+campaignID, nil, auth)
		skus, _ := r.body["skus"].([]any)
		return len(skus)
	}
	body := func(campaignID string) map[string]any {
		skus := make([]map[string]any, n)
		for i := range skus {
			skus[i] = map[string]any{"sku_id": fmt.Sprintf("s%03d", i), "sale_limit": i + 1}
		}
		return map[string]any{"campaign_id": campaignID, "start_at": "2030-01-01T00:00:00Z", "end_at": "2030-01-01T01:00:00Z", "skus": skus}
	}
	// The kill must fall inside the PUT: on a machine fast enough to
	// define every SKU between two reads, try again with another campaign.
	var campaignID string
	var cut int
	for attempt := 0; cut == 0; attempt++ {
		if attempt == 5 {
			t.Fatal("five PUTs of 300 SKUs each ended before the kill that was to cut them")
		}
		d := startDaemon(t, bin, dir)
		campaignID = fmt.Sprintf("big%d", attempt)
		go try(http.MethodPut, d.Base+"/admin/campaigns/"+campaignID, body(campaignID), auth) // cut by the kill: no answer to check
		eventually(t, 2*time.Minute, "the PUT's first SKU", func() bool { return skuCount(d.Base, campaignID) > 0 })
		if err := d.Cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := <-d.Exited; !isKilled(err) {
			t.Fatalf("exit after SIGKILL: %v", err)
		}
		// Cut if the data dir holds fewer SKU folders than the PUT's (the
		// read may have come just before the PUT's end).
		if folders, err := os.ReadDir(filepath.Join(dir, campaignID)); err != nil {
			t.Fatal(err)
		} else if len(folders) < n {
			cut = len(folders)
		}
	}

	d := startDaemon(t, bin, dir) // ready: the pending definitions are finished
	if got := skuCount(d.Base, campaignID); got != n {
		t.Fatalf("after a kill -9 with %d of %d SKU folders made, the restart holds %d SKUs", cut, n, got)
	}
	r := call(t, http.MethodGet, d.Base+"/admin/campaigns/"+campaignID, nil, auth)
	for i, s := range r.body["skus"].([]any) {
		if sk := s.(map[string]any); sk["sku_id"] != fmt.Sprintf("s%03d", i) || sk["sale_limit"] != float64(i+1) {
			t.Fatalf("SKU %d after the restart: %v", i, sk)
		}
	}
	if !strings.Contains(d.Stderr(), "finished the definitions a crash cut short") {
		t.Errorf("the start did not say it finished the cut definitions:\n%s", d.Stderr())
	}
	if r := call(t, http.MethodPut, d.Base+"/admin/campaigns/"+campaignID, body(campaignID), auth); r.status != http.StatusOK {
		t.Fatalf("the PUT repeated after the restart: %v", r)
	}
	t.Logf("kill -9 with %d of %d SKU folders made; all %d defined after the restart", cut, n, n)
}
