package clustertest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/cells"
	"github.com/seckill/seckill/internal/etcdtest"
	"github.com/seckill/seckill/ledger"
)

// cluster is a real etcd, seckilld cells and a router over them, as
// startCluster started them.
type cluster struct {
	bins    map[string]string
	logDir  string
	etcd    *etcdtest.Server
	cellIDs []string
	addrs   map[string]string // by cell: host:port
	procs   map[string]*proc  // by cell
	router  string            // base URL
	ledger  *ledger.Ledger    // the test's own link to etcd
}

// startCluster builds the binaries and starts etcd, the cells (each on a
// data dir of its own) and a router over them. A failed test names the
// folder of the processes' logs.
func startCluster(t *testing.T, cellIDs ...string) *cluster {
	t.Helper()
	cl := &cluster{bins: buildAll(t), logDir: t.TempDir(), etcd: etcdtest.Start(t), cellIDs: cellIDs,
		addrs: map[string]string{}, procs: map[string]*proc{}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("process logs in %s", cl.logDir)
		}
	})
	var routes []string
	for _, c := range cellIDs {
		cl.addrs[c], cl.procs[c] = startCell(t, cl.bins, cl.logDir, c, filepath.Join(t.TempDir(), c), cl.etcd.Endpoint)
		routes = append(routes, c+"="+cl.addrs[c])
	}
	cl.router = startRouter(t, cl.bins, cl.logDir, cl.etcd.Endpoint, routes)
	client, err := ledger.Dial([]string{cl.etcd.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	cl.ledger = ledger.New(client, "")
	return cl
}

// publish publishes campSKU (campaign, SKU) over every cell of the
// cluster with seckillctl cells publish: sale_limit units, initial of
// them granted to each cell up front, top-ups of one unit, open from a
// second ago, 10 minutes to pay.
func (cl *cluster) publish(t *testing.T, camp, skuName string, saleLimit, initial int) {
	t.Helper()
	ctl := exec.Command(cl.bins["seckillctl"], "cells", "publish", "--etcd", cl.etcd.Endpoint, "--campaign", camp, "--sku", skuName,
		"--sale-limit", fmt.Sprint(saleLimit), "--cells", strings.Join(cl.cellIDs, ","), "--initial", fmt.Sprint(initial), "--chunk", "1",
		"--start", time.Now().Add(-time.Second).UTC().Format(time.RFC3339), "--payment-window", "10m")
	ctl.Env = append(os.Environ(), "SECKILL_ADMIN_TOKEN="+token)
	if out, err := ctl.CombinedOutput(); err != nil {
		t.Fatalf("publish %s/%s: %v\n%s", camp, skuName, err, out)
	}
}

// caller returns a function that sends one request with the admin token
// (public routes ignore it) and decodes its JSON answer, failing the test
// on a transport error; so for the test's goroutine.
func caller(t *testing.T) func(method, url, body string) (int, map[string]any) {
	client := &http.Client{Timeout: 10 * time.Second}
	return func(method, url, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return resp.StatusCode, m
	}
}

// usersOfCells returns, for each cell, the first n users ("u0", "u1",
// ...) that the map cells publish made for camp/skuName (an even map of
// cellIDs, version 1) routes to it.
func usersOfCells(t *testing.T, cellIDs []string, camp, skuName string, n int) map[string][]string {
	t.Helper()
	m, err := cells.EvenMap(1, cellIDs)
	if err != nil {
		t.Fatal(err)
	}
	pub := cells.Published{Definition: sku.Definition{CampaignID: camp, SKUID: skuName}, Map: m}
	users := map[string][]string{}
	for u, short := 0, len(cellIDs); short > 0; u++ {
		user := fmt.Sprintf("u%d", u)
		if c := pub.CellOf(user); len(users[c]) < n {
			if users[c] = append(users[c], user); len(users[c]) == n {
				short--
			}
		}
	}
	return users
}
