package clustertest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/bench"
)

// TestLocalCampaignThroughRouter: a campaign is local to one cell or
// published across cells, never both, with real processes:
//   - seckill-bench --target ROUTER without --etcd (seed, then lottery)
//     defines its campaign on the router's default cell and passes;
//   - dd PUT through the router (c1, uncelled, sale_limit 5), then
//     seckillctl cells publish dd/a over c1,c2: exit 1 naming c1; 30
//     users through the router: 5 reserves;
//   - down1 PUT at c2 (not the router's default cell): through the router
//     a reserve 202, a GET 200 and a redefinition 200; at c1, 409 whose
//     advice is c2 or the router;
//   - a data dir from before the claim (hh defined on c1 with no claim in
//     etcd: the test deletes it) under a published hh/a: c1 logs once
//     that it does not take it (while it takes SKUs published after), and
//     restarts (it could not).
func TestLocalCampaignThroughRouter(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, "c1", "c2")
	bins, logDir, etcd, router, l := cl.bins, cl.logDir, cl.etcd, cl.router, cl.ledger
	client, procs, c1 := l.Client(), cl.procs, "http://"+cl.addrs["c1"]
	httpClient := &http.Client{Timeout: 10 * time.Second}

	for _, scenario := range []string{bench.ScenarioSeed, bench.ScenarioLottery} {
		config := bench.DefaultConfig(scenario)
		config.Target, config.AdminToken = router, token
		config.Stock, config.Requests, config.Concurrency, config.MaxTime = 200, 2000, 16, time.Minute
		if scenario == bench.ScenarioLottery {
			// The entry window is a deadline of the sale itself: entrants
			// few enough to enter well within it on a loaded machine (2,000
			// in 2 s did not), since this test is about routing, not speed.
			config.Requests, config.Duration = 300, 5*time.Second
		}
		result, err := bench.Run(context.Background(), config)
		if err != nil || !result.Passed {
			t.Fatalf("%s through the router without --etcd: %v; failures %v", scenario, err, result.Failures)
		}
	}

	var lastBody string // of the last put
	// One window for every PUT: a redefinition of a started campaign
	// that moved its start_at (a PUT a second later) would be refused.
	now := time.Now().UTC().Truncate(time.Second)
	put := func(base, campaign string, saleLimit int) int {
		body := fmt.Sprintf(`{"campaign_id":%q,"start_at":%q,"end_at":%q,"skus":[{"sku_id":"a","sale_limit":%d}]}`,
			campaign, now.Add(-time.Hour).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339), saleLimit)
		req, _ := http.NewRequest(http.MethodPut, base+"/admin/campaigns/"+campaign, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		lastBody = string(b)
		return resp.StatusCode
	}
	publish := func(campaign string) (int, string) {
		cmd := exec.Command(bins["seckillctl"], "cells", "publish", "--etcd", etcd.Endpoint, "--campaign", campaign, "--sku", "a",
			"--sale-limit", "10", "--cells", "c1,c2", "--initial", "4", "--chunk", "1")
		out, err := cmd.CombinedOutput()
		if exit, ok := err.(*exec.ExitError); ok {
			return exit.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}

	// Repro A.
	if code := put(router, "dd", 5); code != http.StatusCreated {
		t.Fatalf("PUT dd through the router: %d", code)
	}
	if code, out := publish("dd"); code != 1 || !strings.Contains(out, "on cell c1") {
		t.Fatalf("publish over a local dd: exit %d: %s", code, out)
	}
	accepted := 0
	for u := range 30 {
		body := fmt.Sprintf(`{"request_id":"r%d","user_id":"u%d"}`, u, u)
		resp, err := httpClient.Post(router+"/v1/campaigns/dd/skus/a/reservations", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusAccepted {
			accepted++
		}
	}
	if accepted != 5 {
		t.Fatalf("%d reserves of dd/a, sale_limit 5", accepted)
	}

	// A campaign defined at a cell other than the router's default cell
	// (c1) is reached through the router: the router follows its
	// campaigns/<c>/local key.
	c2 := "http://" + cl.addrs["c2"]
	if code := put(c2, "down1", 5); code != http.StatusCreated {
		t.Fatalf("PUT down1 at c2: %d", code)
	}
	resp, err := httpClient.Post(router+"/v1/campaigns/down1/skus/a/reservations", "application/json", strings.NewReader(`{"request_id":"r1","user_id":"u1"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("reserve down1/a through the router: %d", resp.StatusCode)
	}
	if resp, err = httpClient.Get(router + "/v1/campaigns/down1/skus/a"); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET down1/a through the router: %d", resp.StatusCode)
	}
	if code := put(router, "down1", 6); code != http.StatusOK {
		t.Fatalf("PUT down1 (a redefinition) through the router: %d %s", code, lastBody)
	}
	if code := put(c1, "down1", 6); code != http.StatusConflict || !strings.Contains(lastBody, "define it there, or through the router (which sends it there)") {
		t.Fatalf("PUT down1 at c1: %d %s", code, lastBody)
	}

	// A data dir from before the claim.
	if code := put(c1, "hh", 5); code != http.StatusCreated {
		t.Fatalf("PUT hh at c1: %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.Delete(ctx, l.LocalKey("hh")); err != nil {
		t.Fatal(err)
	}
	if code, out := publish("hh"); code != 0 {
		t.Fatalf("publish hh with no claim: exit %d: %s", code, out)
	}
	takes := func(campaign string) {
		if code, out := publish(campaign); code != 0 {
			t.Fatalf("publish %s: exit %d: %s", campaign, code, out)
		}
		waitFor(t, "c1 takes "+campaign+"/a", func() bool {
			resp, err := httpClient.Get(c1 + "/v1/campaigns/" + campaign + "/skus/a")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
	}
	refusals := func() int {
		b, err := os.ReadFile(filepath.Join(logDir, "c1.log"))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(b), `msg="not taking a published SKU"`)
	}
	takes("ii") // hh/a is refused at the latest in the poll that takes ii
	takes("jj") // a poll after the refusal
	if n := refusals(); n != 1 {
		t.Fatalf("c1 logged %d refusals of hh/a, want 1", n)
	}
	procs["c1"].term()
	procs["c1"].start(t) // starts: the SKU it does not take is logged, not fatal
	takes("kk")
	if n := refusals(); n != 2 { // once per process
		t.Fatalf("c1 logged %d refusals of hh/a over two processes, want 2", n)
	}
	if code := put(c1, "hh", 6); code != http.StatusConflict {
		t.Fatalf("PUT hh at c1 once published: %d", code)
	}
}
