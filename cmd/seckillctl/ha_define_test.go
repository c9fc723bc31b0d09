package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/cmd/seckilld/seckilldtest"
	"github.com/seckill/seckill/internal/etcdtest"
	"github.com/seckill/seckill/ledger"
	"github.com/seckill/seckill/replica"
)

// bigCampaign is a campaign PUT's body of n SKUs, s000 to s<n-1>, SKU i
// with sale_limit i+1.
func bigCampaign(campaignID string, n int) map[string]any {
	skus := make([]map[string]any, n)
	for i := range skus {
		skus[i] = map[string]any{"sku_id": fmt.Sprintf("s%03d", i), "sale_limit": i + 1}
	}
	return map[string]any{"campaign_id": campaignID, "start_at": "2030-01-01T00:00:00Z", "end_at": "2030-01-01T01:00:00Z", "skus": skus}
}

// adminCall sends method to url with the admin token and body (nil:
// none), and returns the status and the decoded answer.
func adminCall(method, url string, body any) (int, map[string]any, error) {
	return sendJSON(method, url, haToken, body)
}

// campaignView is GET /admin/campaigns/{c} on base as far as the test
// reads it: its SKUs (none while it answers otherwise than 200) and
// partly_defined.
type campaignView struct {
	skus   []any
	partly bool
}

func readCampaign(base, campaignID string) campaignView {
	code, body, err := adminCall(http.MethodGet, base+"/admin/campaigns/"+campaignID, nil)
	if err != nil || code != http.StatusOK {
		return campaignView{}
	}
	skus, _ := body["skus"].([]any)
	partly, _ := body["partly_defined"].(bool)
	return campaignView{skus: skus, partly: partly}
}

// wantWhole fails unless v is the whole campaign of n SKUs, each as
// bigCampaign states it, not flagged partly_defined.
func wantWhole(t *testing.T, where string, v campaignView, n int) {
	t.Helper()
	if len(v.skus) != n || v.partly {
		t.Fatalf("%s: %d of %d SKUs, partly_defined %v", where, len(v.skus), n, v.partly)
	}
	for i, s := range v.skus {
		if sk := s.(map[string]any); sk["sku_id"] != fmt.Sprintf("s%03d", i) || sk["sale_limit"] != float64(i+1) {
			t.Fatalf("%s: SKU %d is %v", where, i, sk)
		}
	}
}

// ready reports whether base's /readyz answers 200.
func ready(base string) bool {
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// pendingLists reads the replica set rs1's pending definitions in etcd.
func pendingLists(t *testing.T, endpoint string) []replica.PendingEntry {
	t.Helper()
	c, err := ledger.Dial([]string{endpoint})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e, err := replica.NewEtcd(c, ledger.DefaultPrefix, "rs1", "observer", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lists, err := e.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return lists
}

// TestReplicaSetFinishesACampaignPutCutByAFailover kills the primary (kill
// -9) in the middle of a campaign PUT of 300 SKUs, once it has defined
// 30 and before it has made every SKU's folder: the standby that takes
// over holds only the SKUs whose definitions were committed, and finishes
// the rest from the list the primary kept in etcd. Alone, the new primary
// is ready with the whole campaign. Strict, it commits nothing before a
// standby joins: until then the campaign shows partly_defined; once the
// old primary rejoins as its standby the definition is finished. Either
// way the list is gone from etcd once finished, the old primary, back as
// standby and then handed the lead, finishes nothing of its own, and the
// PUT repeated on the new primary answers 200.
func TestReplicaSetFinishesACampaignPutCutByAFailover(t *testing.T) {
	t.Parallel()
	bin := seckilldtest.Build(t, raceEnabled)
	forSyncModes(t, func(t *testing.T, strict bool, extra []string) {
		const n = 300
		// The kill must fall inside the PUT: on a machine fast enough to
		// define every SKU between two reads, try again on a new set.
		var p *replicaPair
		var etcd *etcdtest.Server
		var campaignID string
		cut := 0
		for attempt := 0; cut == 0; attempt++ {
			if attempt == 3 {
				t.Fatal("three PUTs of 300 SKUs each ended before the kill that was to cut them")
			}
			etcd = etcdtest.Start(t)
			p = startPair(t, bin, etcd.Endpoint, etcd.Endpoint, extra...)
			campaignID = fmt.Sprintf("big%d", attempt)
			go adminCall(http.MethodPut, p.a.Base+"/admin/campaigns/"+campaignID, bigCampaign(campaignID, n)) // cut by the kill: no answer to check
			for deadline := time.Now().Add(2 * time.Minute); len(readCampaign(p.a.Base, campaignID).skus) < n/10; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the PUT never defined %d SKUs on the primary:\n%s", n/10, p.a.Stderr())
				}
			}
			if err := p.a.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if err := <-p.a.Exited; !isKilled(err) {
				t.Fatalf("exit after SIGKILL: %v", err)
			}
			// Cut if the old primary's data dir holds fewer SKU folders
			// than the PUT's: the rest were never begun, on either replica.
			folders, err := os.ReadDir(filepath.Join(p.aDir, campaignID))
			if err != nil {
				t.Fatal(err)
			}
			if len(folders) < n {
				cut = len(folders)
				break
			}
			terminate(t, p.b)
		}
		a, b := p.a, p.b
		waitHealth(t, b, "b takes over", func(h replicaHealth) bool { return h.Role == "primary" })

		if strict {
			// No standby, nothing commits: the campaign is visibly partial.
			v := readCampaign(b.Base, campaignID)
			if len(v.skus) == 0 || len(v.skus) >= n || !v.partly {
				t.Fatalf("strict, before a standby joins: %d of %d SKUs, partly_defined %v, want some, not all, flagged", len(v.skus), n, v.partly)
			}
			if ready(b.Base) {
				t.Fatal("strict: the new primary is ready before the cut definition is finished")
			}
			a = startReplica(t, bin, p.aDir, etcd.Endpoint, "a", extra...)
			p.a = a
		}
		// Each SKU's definition is one commit, 16 SKUs at once
		// (Engine.DefineAll); strict, each waits for the standby's
		// acknowledgement too, and the standby makes each new SKU's folder
		// and log one after another. Under make test's parallel packages,
		// whose fsyncs share the disk, one commit has taken 0.4 s.
		for deadline := time.Now().Add(5 * time.Minute); !ready(b.Base); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the new primary never got ready:\n%s", b.Stderr())
			}
		}
		wantWhole(t, "the new primary, ready", readCampaign(b.Base, campaignID), n)
		if !strings.Contains(b.Stderr(), "finished the definitions a crash cut short") {
			t.Errorf("the new primary did not say it finished the cut definition:\n%s", b.Stderr())
		}
		if lists := pendingLists(t, etcd.Endpoint); len(lists) != 0 {
			t.Fatalf("etcd still holds %d pending lists once the definition is finished", len(lists))
		}

		// The old primary rejoins as standby and is handed the lead: it
		// finishes nothing of its own, and leads the whole campaign.
		if !strict {
			a = startReplica(t, bin, p.aDir, etcd.Endpoint, "a", extra...)
			p.a = a
		}
		waitHealth(t, a, "a rejoins as b's standby", func(h replicaHealth) bool { return h.Role == "standby" && h.Primary == "b" })
		waitSync(t, b.Base, "a")
		if code, body, err := adminCall(http.MethodPut, b.Base+"/admin/campaigns/"+campaignID, bigCampaign(campaignID, n)); err != nil || code != http.StatusOK {
			t.Fatalf("the PUT repeated on the new primary: %d %v %v", code, body, err)
		}
		wantCode(t, 0, "ha", "switchover", "--etcd", etcd.Endpoint, "--replica-set", "rs1", "--to", "a", "--admin-token", haToken)
		waitHealth(t, b, "b follows a", func(h replicaHealth) bool { return h.Role == "standby" && h.Primary == "a" })
		for deadline := time.Now().Add(2 * time.Minute); !ready(a.Base); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("a, handed the lead, never got ready:\n%s", a.Stderr())
			}
		}
		wantWhole(t, "a, handed the lead", readCampaign(a.Base, campaignID), n)
		if strings.Contains(a.Stderr(), "finished the definitions") {
			t.Errorf("the old primary finished definitions of its own:\n%s", a.Stderr())
		}
		p.stopAndVerify(t, 0)
		t.Logf("kill -9 with %d of %d SKU folders made; all %d defined on the new primary", cut, n, n)
	})
}
