package clustertest

import (
	"context"
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

// TestCellOnAnEmptyDataDirSellsNoTokenTwice: c1 sells 60 units (its
// initial grant and top-ups), stops, loses its data dir, and starts again
// on an empty one before any write-off, as an orchestrator that restarts
// a cell on a fresh volume would. The ledger marks c1's log as having
// recorded an EPOCH, the new log holds none: the cell sells nothing
// (SOLD_OUT, no Retry-After), says so on /metrics
// (seckill_cell_log_lost 1) and in the cluster audit, and none of the
// tokens the lost log sold is sold again. After seckillctl cells
// write-off the gauge is 0, the cell still sells nothing, and the mark
// stays in the ledger.
func TestCellOnAnEmptyDataDirSellsNoTokenTwice(t *testing.T) {
	t.Parallel()
	bins := buildAll(t)
	logDir := t.TempDir()
	etcd := etcdtest.Start(t)
	client, err := ledger.Dial([]string{etcd.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	l := ledger.New(client, "")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := ledger.SKU{Campaign: campaign, SKU: skuID}
	m, err := cells.EvenMap(1, []string{"c1"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	d := sku.Definition{CampaignID: campaign, SKUID: skuID, StartAt: now.Add(-time.Second).UnixMilli(), EndAt: now.Add(time.Hour).UnixMilli(),
		PaymentWindowMs: 600_000, SaleLimit: 300, ReleaseOnClose: true}
	if _, err := cells.Publish(ctx, l, d, m, 50, []ledger.InitialGrant{{Cell: "c1", Units: 40}}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "c1")
	addr, cell := startCell(t, bins, logDir, "c1", dir, etcd.Endpoint)
	base := "http://" + addr
	httpClient := &http.Client{Timeout: 5 * time.Second}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("process logs in %s", logDir)
		}
	})

	// The first life sells 60 units: the initial 40 and a top-up.
	soldBy := map[int]string{} // token -> user
	user := 0
	waitFor(t, "c1 sold 60 units", func() bool {
		for len(soldBy) < 60 {
			code, body := reserve(t, httpClient, base, user)
			if code != http.StatusAccepted {
				return false // empty while its top-up is pending: asked again
			}
			soldBy[tokenOf(t, body)] = body
			user++
		}
		return true
	})
	if len(soldBy) != 60 {
		t.Fatalf("60 reserves sold %d distinct tokens", len(soldBy))
	}
	cell.term()
	if allocs, err := l.Allocations(ctx, s, "c1"); err != nil || len(allocs) < 2 {
		t.Fatalf("c1's allocations after its first life: %v %v, want its initial grant and a top-up", allocs, err)
	}

	// The disk is lost; c1 starts on an empty data dir, not written off.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	cell.start(t)
	lost := func() bool {
		return metricValue(t, httpClient, base+"/metrics", `seckill_cell_log_lost{campaign_id="`+campaign+`"`) == 1
	}
	waitFor(t, "the restarted c1 finds its log lost (seckill_cell_log_lost 1)", func() bool {
		code, body := reserve(t, httpClient, base, user)
		user++
		if code == http.StatusAccepted {
			tok := tokenOf(t, body)
			if first, ok := soldBy[tok]; ok {
				t.Fatalf("token %d sold twice: by the lost log (%s) and by the empty data dir (%s)", tok, first, body)
			}
			t.Fatalf("c1 on an empty data dir sold token %d before its quota was written off: %s", tok, body)
		}
		if code != http.StatusConflict || !strings.Contains(body, "SOLD_OUT") {
			t.Fatalf("a reserve at the restarted c1: %d %s", code, body)
		}
		return lost()
	})
	checkSoldOutFinal(t, httpClient, base, user)
	user++
	a, err := cells.AuditSKU(ctx, l, cells.Published{Definition: d, Map: m}, map[string]string{"c1": base}, token)
	if err != nil {
		t.Fatal(err)
	}
	if c := a.Cells["c1"]; a.OK || c.LogLost == nil || !*c.LogLost || !strings.Contains(strings.Join(a.Problems, "; "), "seckillctl cells write-off") {
		t.Fatalf("the cluster audit of the lost log's cell: ok %v, %+v, problems %v", a.OK, c, a.Problems)
	}

	// The operator writes c1's quota off: nothing is sold still, the
	// gauge falls to 0, the mark stays.
	ctl := exec.CommandContext(ctx, bins["seckillctl"], "cells", "write-off", "--etcd", etcd.Endpoint, "--campaign", campaign, "--sku", skuID, "--cell", "c1")
	if out, err := ctl.CombinedOutput(); err != nil {
		t.Fatalf("cells write-off: %v\n%s", err, out)
	}
	waitFor(t, "seckill_cell_log_lost 0 after the write-off", func() bool { return !lost() })
	checkSoldOutFinal(t, httpClient, base, user)
	st, err := l.Read(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Logs["c1"]; !ok || len(st.Check()) != 0 || st.WrittenOff["c1"].Units != st.Held("c1") {
		t.Fatalf("the ledger after the write-off: marks %v, check %v, written off %+v", st.Logs, st.Check(), st.WrittenOff)
	}
}

// tokenOf reads the token_id of a reserve's 202 body.
func tokenOf(t *testing.T, body string) int {
	t.Helper()
	var r struct {
		TokenID int `json:"token_id"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil || r.TokenID == 0 {
		t.Fatalf("a 202 without a token_id: %v %s", err, body)
	}
	return r.TokenID
}

// checkSoldOutFinal reserves as user n at base and wants 409 SOLD_OUT
// without Retry-After: no top-up will come.
func checkSoldOutFinal(t *testing.T, c *http.Client, base string, n int) {
	t.Helper()
	body := fmt.Sprintf(`{"request_id":"f%d","user_id":"u%d"}`, n, n)
	resp, err := c.Post(base+"/v1/campaigns/"+campaign+"/skus/"+skuID+"/reservations", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(b), "SOLD_OUT") || resp.Header.Get("Retry-After") != "" {
		t.Fatalf("a reserve at the lost log's cell: %d %s, Retry-After %q; want 409 SOLD_OUT without Retry-After", resp.StatusCode, b, resp.Header.Get("Retry-After"))
	}
}
