package clustertest

import (
	"context"
	"fmt"
	"io"
	"net/http"
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

// TestCellStartsWithEtcdDown: a cell whose data dir holds a grant, started
// while etcd does not answer (its link cut by a proxy the test controls),
// serves the quota its log holds, takes no epoch and asks for no top-up;
// once etcd answers it takes a new epoch, tops up and sells on. On the
// way, the data dir started under another cell's id, or without --cell,
// is refused.
func TestCellStartsWithEtcdDown(t *testing.T) {
	t.Parallel()
	bins := buildAll(t)
	logDir := t.TempDir()
	etcd := etcdtest.Start(t)
	proxy, err := etcdtest.NewProxy(etcd.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	client, err := ledger.Dial([]string{etcd.Endpoint}) // the test's own link, never cut
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	l := ledger.New(client, "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := ledger.SKU{Campaign: campaign, SKU: skuID}
	m, err := cells.EvenMap(1, []string{"c1"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	d := sku.Definition{CampaignID: campaign, SKUID: skuID, StartAt: now.Add(-time.Second).UnixMilli(), EndAt: now.Add(time.Hour).UnixMilli(),
		PaymentWindowMs: 600_000, SaleLimit: 300, ReleaseOnClose: true}
	if _, err := cells.Publish(ctx, l, d, m, 50, []ledger.InitialGrant{{Cell: "c1", Units: 100}}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "c1")
	addr, cell := startCell(t, bins, logDir, "c1", dir, proxy.Addr)
	base := "http://" + addr
	httpClient := &http.Client{Timeout: 5 * time.Second}
	waitFor(t, "the initial grant logged", func() bool {
		a, err := getAudit(httpClient, base, "c1")
		return err == nil && a.Granted == 100
	})
	cell.term()

	// c1's data dir started as another cell: refused at start.
	if out, err := exec.Command(bins["seckilld"], "--addr", "127.0.0.1:0", "--data-dir", dir, "--cell", "c2",
		"--etcd", etcd.Endpoint, "--admin-token", token).CombinedOutput(); err == nil || !strings.Contains(string(out), "belongs to another cell") {
		t.Fatalf("c1's data dir started as c2: %v\n%s", err, out)
	}
	// And without --cell: it would sell c1's quota to every cell's users.
	// (Bounded: a seckilld that took the data dir would serve on.)
	noCell, cancelNoCell := context.WithTimeout(ctx, 30*time.Second)
	out, err := exec.CommandContext(noCell, bins["seckilld"], "--addr", "127.0.0.1:0", "--data-dir", dir, "--admin-token", token).CombinedOutput()
	cancelNoCell()
	if err == nil || !strings.Contains(string(out), "is cell c1's: start it with --cell c1") {
		t.Fatalf("c1's data dir started without --cell: %v\n%s", err, out)
	}

	// etcd down at start: the link cut, the data dir holds allocation 1.
	proxy.Cut()
	cell.start(t)
	sold := 0
	for ; sold < 120; sold++ {
		code, body := reserve(t, httpClient, base, sold)
		if code != http.StatusAccepted {
			if code != http.StatusConflict || !strings.Contains(body, "SOLD_OUT") {
				t.Fatalf("reserve %d with etcd down: %d %s", sold, code, body)
			}
			break
		}
	}
	if sold != 100 {
		t.Fatalf("with etcd down the cell sold %d, want the 100 its log holds", sold)
	}
	for _, gauge := range []string{"seckill_cell_ledger_reachable{", "seckill_cell_epoch{"} {
		if metricValue(t, httpClient, base+"/metrics", gauge) < 0 {
			t.Fatalf("/metrics lacks %s", gauge)
		}
	}
	if v := metricValue(t, httpClient, base+"/metrics", "seckill_cell_ledger_reachable{"); v != 0 {
		t.Fatalf("with etcd down: seckill_cell_ledger_reachable %v", v)
	}
	// The cluster audit (etcd reached directly) shows the cell's own view.
	a, err := cells.AuditSKU(ctx, l, cells.Published{Definition: d, Map: m}, map[string]string{"c1": base}, token)
	if err != nil {
		t.Fatal(err)
	}
	if c := a.Cells["c1"]; !c.Reachable || c.LedgerReachable == nil || *c.LedgerReachable || c.Granted != 100 {
		t.Fatalf("the cluster audit of the cut-off cell: %+v", c)
	}
	if e, err := l.Epoch(ctx, "c1"); err != nil || e != 1 {
		t.Fatalf("the cell's epoch in etcd while its link is cut: %d %v, want 1 (the first start's)", e, err)
	}
	if allocs, err := l.Allocations(ctx, s, "c1"); err != nil || len(allocs) != 1 {
		t.Fatalf("allocations while the link is cut: %d %v, want only the initial one", len(allocs), err)
	}

	// etcd answers again: a new epoch, a top-up, sales again.
	proxy.Heal()
	waitFor(t, "selling again once etcd answers", func() bool {
		code, _ := reserve(t, httpClient, base, sold)
		if code == http.StatusAccepted {
			sold++
			return true
		}
		return false
	})
	// A new epoch, above the first start's. Not necessarily 2: a bump
	// that etcd applied but whose answer the cell did not get (the link
	// healing under it, a deadline on a loaded machine) is taken again,
	// and fencing needs epochs to rise, not to be consecutive.
	e, err := l.Epoch(ctx, "c1")
	if err != nil || e < 2 {
		t.Fatalf("the cell's epoch after etcd came back: %d %v, want above 1", e, err)
	}
	if allocs, err := l.Allocations(ctx, s, "c1"); err != nil || len(allocs) < 2 || allocs[1].Epoch != e {
		t.Fatalf("the top-up after etcd came back: %+v %v, want it under epoch %d", allocs, err, e)
	}
	if v := metricValue(t, httpClient, base+"/metrics", "seckill_cell_ledger_reachable{"); v != 1 {
		t.Fatalf("with etcd back: seckill_cell_ledger_reachable %v", v)
	}
}

// waitFor polls cond every 50 ms for up to 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 30 s: %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// reserve posts the reserve of user n (request_id r<n>) to a cell.
func reserve(t *testing.T, c *http.Client, base string, n int) (int, string) {
	t.Helper()
	body := fmt.Sprintf(`{"request_id":"r%d","user_id":"u%d"}`, n, n)
	resp, err := c.Post(base+"/v1/campaigns/"+campaign+"/skus/"+skuID+"/reservations", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
