package clustertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/cells"
	"github.com/seckill/seckill/internal/etcdtest"
)

// TestCampaignScopeAcrossCells is one purchase per campaign with cells: a campaign whose
// purchase_limit is "campaign", two celled SKUs (red, blue) sharing one
// map of two cells, published in a real etcd, two seckilld cells and a
// seckill-router. 200 users each click both SKUs at once through the
// router: every user gets exactly one 202 and one 409 ALREADY_PURCHASED
// naming the other SKU, because the router sends both clicks to the cell
// of hash(campaign, user), whose purchase registry sees both. Each cell's
// campaign audit is ok and the cells' live users add up to 200. A user's
// cancel, then a buy on the other SKU: 202. A user asked directly at the
// other cell: 421 WRONG_CELL on both SKUs. Publishing a third SKU of the
// campaign with another map, or with SKU scope, is refused.
func TestCampaignScopeAcrossCells(t *testing.T) {
	t.Parallel()
	const phones, users = "phones", 200
	bins := buildAll(t)
	logDir := t.TempDir()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("process logs in %s", logDir)
		}
	})
	etcd := etcdtest.Start(t)
	cellIDs := []string{"c1", "c2"}
	ctl := func(args ...string) (string, error) {
		cmd := exec.Command(bins["seckillctl"], args...)
		cmd.Env = append(os.Environ(), "SECKILL_ADMIN_TOKEN="+token)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		return string(out) + stderr.String(), err
	}
	publish := func(skuID, limit, cellList string) (string, error) {
		return ctl("cells", "publish", "--etcd", etcd.Endpoint, "--campaign", phones, "--sku", skuID,
			"--sale-limit", "400", "--cells", cellList, "--initial", "150", "--chunk", "50",
			"--start", time.Now().Add(-time.Second).UTC().Format(time.RFC3339), "--payment-window", "10m",
			"--purchase-limit", limit)
	}
	for _, s := range []string{"red", "blue"} {
		if out, err := publish(s, "campaign", "c1,c2"); err != nil {
			t.Fatalf("publish %s: %v\n%s", s, err, out)
		}
	}
	if out, err := publish("green", "campaign", "c1"); err == nil || !strings.Contains(out, "share one cell map") {
		t.Fatalf("a campaign-scope SKU with another map: %v\n%s", err, out)
	}
	if out, err := publish("green", "sku", "c1,c2"); err == nil || !strings.Contains(out, "the scope is the campaign's") {
		t.Fatalf("a SKU-scope SKU in a campaign-scope campaign: %v\n%s", err, out)
	}

	addrs := map[string]string{}
	var routes []string
	for _, c := range cellIDs {
		addrs[c], _ = startCell(t, bins, logDir, c, filepath.Join(t.TempDir(), c), etcd.Endpoint)
		routes = append(routes, c+"="+addrs[c])
	}
	router := startRouter(t, bins, logDir, etcd.Endpoint, routes)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 512}}
	call := func(method, url, body string) (int, map[string]any) {
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return resp.StatusCode, m
	}
	// reserve retries a lost or unavailable answer with the same request_id.
	reserve := func(base, skuID, requestID, user string) (int, map[string]any) {
		var code int
		var m map[string]any
		for try := 0; try < 5; try++ {
			code, m = call("POST", base+"/v1/campaigns/"+phones+"/skus/"+skuID+"/reservations",
				fmt.Sprintf(`{"request_id":"%s","user_id":"%s"}`, requestID, user))
			if code != 0 && code != 503 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		return code, m
	}
	for _, s := range []string{"red", "blue"} {
		if code, m := call("GET", router+"/router/campaigns/"+phones+"/skus/"+s, ""); code != 200 || m["purchase_limit"] != "campaign" {
			t.Fatalf("the router's map of %s: %d %v", s, code, m)
		}
	}

	// 200 users, each clicking red and blue at the same instant.
	type answer struct {
		code int
		body map[string]any
	}
	got := make([][2]answer, users)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for u := range users {
		for k, s := range []string{"red", "blue"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-gate
				code, m := reserve(router, s, fmt.Sprintf("u%d-%s", u, s), fmt.Sprintf("u%d", u))
				got[u][k] = answer{code, m}
			}()
		}
	}
	close(gate)
	wg.Wait()
	held := make([]string, users) // the SKU each user holds
	ids := make([]string, users)  // and its reservation id
	for u := range users {
		var accepted []int
		for k := range 2 {
			if got[u][k].code == 202 {
				accepted = append(accepted, k)
			}
		}
		if len(accepted) != 1 {
			t.Fatalf("user u%d: red %d %v, blue %d %v: want exactly one 202", u, got[u][0].code, got[u][0].body, got[u][1].code, got[u][1].body)
		}
		k := accepted[0]
		held[u], ids[u] = []string{"red", "blue"}[k], got[u][k].body["reservation_id"].(string)
		other := got[u][1-k]
		if other.code != 409 || other.body["error"] != "ALREADY_PURCHASED" || other.body["reservation_id"] != ids[u] || other.body["sku_id"] != held[u] {
			t.Fatalf("user u%d's other click: %d %v, want 409 ALREADY_PURCHASED naming %s on %s", u, other.code, other.body, ids[u], held[u])
		}
	}

	// Each cell's campaign audit: ok, and the cells' live users add up.
	audit := func() {
		t.Helper()
		total := 0
		for _, c := range cellIDs {
			code, a := call("GET", "http://"+addrs[c]+"/admin/campaigns/"+phones+"/audit", "")
			live, _ := a["live_users"].(float64)
			if code != 200 || a["invariant_ok"] != true || a["purchase_limit"] != "campaign" || live == 0 {
				t.Fatalf("cell %s's campaign audit: %d %v", c, code, a)
			}
			total += int(live)
		}
		if total != users {
			t.Fatalf("live users over the cells: %d, want %d", total, users)
		}
	}
	audit()

	// A user asked directly at the cell that is not theirs: 421 on both SKUs.
	pub := cells.Published{Definition: sku.Definition{CampaignID: phones, SKUID: "red", PurchaseLimit: sku.PurchaseLimitCampaign}}
	if pub.Map, _ = cells.EvenMap(1, cellIDs); pub.CellOf("u0") != sku.ReservationCell(ids[0]) {
		t.Fatalf("u0 holds %s, not in its cell %s", ids[0], pub.CellOf("u0"))
	}
	stranger := map[string]string{"c1": "c2", "c2": "c1"}[pub.CellOf("u0")]
	for _, s := range []string{"red", "blue"} {
		if code, m := reserve("http://"+addrs[stranger], s, "direct-"+s, "u0"); code != 421 || m["error"] != "WRONG_CELL" {
			t.Fatalf("u0 at %s on %s: %d %v, want 421 WRONG_CELL", stranger, s, code, m)
		}
	}

	// Cancel, then buy the other SKU: 202, for ten users of both cells.
	for u := range 10 {
		other := map[string]string{"red": "blue", "blue": "red"}[held[u]]
		if code, m := call("POST", router+"/v1/reservations/"+ids[u]+"/cancel", `{}`); code != 200 {
			t.Fatalf("u%d's cancel of %s: %d %v", u, ids[u], code, m)
		}
		if code, m := reserve(router, other, fmt.Sprintf("u%d-again", u), fmt.Sprintf("u%d", u)); code != 202 {
			t.Fatalf("u%d's buy of %s after the cancel: %d %v", u, other, code, m)
		}
	}
	audit()
}
