package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/etcdtest"
	"github.com/seckill/seckill/ledger"
)

// TestCellsWriteOff: "cells write-off" records a lost cell's outstanding
// quota in the ledger once (a repeat answers the same write-off), refuses
// a cell outside the SKU's map, and the cluster audit counts the quota as
// written off, not as held by a cell it could not reach.
func TestCellsWriteOff(t *testing.T) {
	etcd := etcdtest.Start(t)
	sku := []string{"--etcd", etcd.Endpoint, "--campaign", "demo", "--sku", "sku-1"}
	wantCode(t, 0, append([]string{"cells", "publish", "--sale-limit", "200", "--cells", "c1,c2", "--initial", "40", "--chunk", "20"}, sku...)...)

	var first, again struct {
		WrittenOff struct {
			Cell        string `json:"cell"`
			Units       uint64 `json:"units"`
			Allocations int    `json:"allocations"`
			AtMs        int64  `json:"at_ms"`
		} `json:"written_off"`
	}
	if err := json.Unmarshal([]byte(wantCode(t, 0, append([]string{"cells", "write-off", "--cell", "c2"}, sku...)...)), &first); err != nil {
		t.Fatal(err)
	}
	if w := first.WrittenOff; w.Cell != "c2" || w.Units != 40 || w.Allocations != 1 || w.AtMs == 0 {
		t.Fatalf("write-off: %+v", w)
	}
	if err := json.Unmarshal([]byte(wantCode(t, 0, append([]string{"cells", "write-off", "--cell", "c2"}, sku...)...)), &again); err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Fatalf("a repeated write-off: %+v, want the first %+v", again.WrittenOff, first.WrittenOff)
	}
	wantCode(t, 2, append([]string{"cells", "write-off", "--cell", "c9"}, sku...)...)
	// A missing flag is named, with the subcommand's usage only.
	code, _, errOut := ctl(t, "cells", "write-off", "--etcd", etcd.Endpoint, "--campaign", "demo", "--cell", "c2")
	if code != exitUsage || !strings.Contains(errOut, "cells write-off: --sku is missing") ||
		strings.Count(errOut, "\n  seckillctl ") != 1 || !strings.Contains(errOut, "seckillctl cells write-off --etcd") {
		t.Fatalf("write-off without --sku: exit %d, stderr %q", code, errOut)
	}

	// No cell runs: c1 is unreached (its 40 units are the undersell bound
	// while it stays away), c2's 40 are written off.
	var audit struct {
		SKUs []struct {
			Unreached  uint64 `json:"held_by_unreached_cells"`
			WrittenOff uint64 `json:"written_off"`
			Never      uint64 `json:"never_granted"`
			Cells      map[string]struct {
				WrittenOff uint64 `json:"written_off"`
				Error      string `json:"error"`
			} `json:"cells"`
			LedgerViolations []string `json:"ledger_violations"`
			Ledger           struct {
				WrittenOff map[string]json.RawMessage `json:"written_off"`
			} `json:"ledger"`
		} `json:"skus"`
	}
	if err := json.Unmarshal([]byte(wantCode(t, 0, "audit", "--etcd", etcd.Endpoint, "--campaign", "demo")), &audit); err != nil {
		t.Fatal(err)
	}
	a := audit.SKUs[0]
	if a.Unreached != 40 || a.WrittenOff != 40 || a.Never != 120 || a.Cells["c2"].WrittenOff != 40 || a.Cells["c2"].Error != "" ||
		len(a.LedgerViolations) != 0 || a.Ledger.WrittenOff["c2"] == nil {
		t.Fatalf("audit after the write-off: %+v", a)
	}
}

// TestCellsPublishOverLocal: "cells publish" of a campaign a cell defines
// locally (its claim in etcd, ledger.ClaimLocal) exits 1 and names the
// cell; nothing is published.
func TestCellsPublishOverLocal(t *testing.T) {
	etcd := etcdtest.Start(t)
	l, ctx := testLedger(t, etcd.Endpoint)
	if err := l.ClaimLocal(ctx, "dd", "c1"); err != nil {
		t.Fatal(err)
	}
	args := []string{"cells", "publish", "--etcd", etcd.Endpoint, "--campaign", "dd", "--sku", "a", "--sale-limit", "10",
		"--cells", "c1,c2", "--initial", "4", "--chunk", "1"}
	code, out, errOut := ctl(t, args...)
	if code != exitFailed || out != "" || !strings.Contains(errOut, "on cell c1") || !strings.Contains(errOut, "nothing was published") {
		t.Fatalf("publish over a local campaign: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, err := l.Read(ctx, ledger.SKU{Campaign: "dd", SKU: "a"}); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("a ledger after a refused publish: %v", err)
	}
}

// TestCellsPublishRefusalsExitOne: every publish refused by what etcd
// holds exits 1 (exitFailed) with nothing published, as one over a local
// campaign does: a SKU published already, a campaign-scope SKU with
// another map, a SKU-scope SKU in a campaign-scope campaign.
func TestCellsPublishRefusalsExitOne(t *testing.T) {
	etcd := etcdtest.Start(t)
	publish := func(skuID, scope, cellList string) (int, string) {
		code, _, errOut := ctl(t, "cells", "publish", "--etcd", etcd.Endpoint, "--campaign", "pp", "--sku", skuID, "--sale-limit", "10",
			"--cells", cellList, "--initial", "2", "--chunk", "1", "--purchase-limit", scope)
		return code, errOut
	}
	if code, errOut := publish("red", "campaign", "c1,c2"); code != exitOK {
		t.Fatalf("publish red: exit %d: %s", code, errOut)
	}
	// A SKU published already may have been published by this same
	// command's first attempt whose answer was lost: the refusal says so.
	for _, c := range []struct{ sku, scope, cells, want, nothing string }{
		{"red", "campaign", "c1,c2", "already published", "this run published nothing (an earlier run did, perhaps this command's own first attempt"},
		{"green", "campaign", "c1", "share one cell map", "nothing was published"},
		{"green", "sku", "c1,c2", "the scope is the campaign's", "nothing was published"},
	} {
		if code, errOut := publish(c.sku, c.scope, c.cells); code != exitFailed || !strings.Contains(errOut, c.want) ||
			!strings.Contains(errOut, c.nothing) {
			t.Errorf("publish %s %s over %s: exit %d, stderr %q", c.sku, c.scope, c.cells, code, errOut)
		}
	}
}

// TestCellsAuditRefusesWhatItCannotUse: a --cells entry that is no
// cell=URL is a usage error quoting it, before etcd is asked; an etcd that
// does not answer is said as such, naming its address; a campaign no cell
// holds (one seckilld's, a replica set's) names the audit that applies.
func TestCellsAuditRefusesWhatItCannotUse(t *testing.T) {
	etcd := etcdtest.Start(t)
	if code, _, stderr := ctl(t, "audit", "--etcd", etcd.Endpoint, "--campaign", "sale", "--admin-token", "t"); code != exitUsage ||
		!strings.Contains(stderr, `no celled SKU of campaign "sale" in etcd`) || !strings.Contains(stderr, "GET /admin/campaigns/sale/audit") {
		t.Fatalf("a campaign no cell holds: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := ctl(t, "audit", "--etcd", "127.0.0.1:1", "--campaign", "demo", "--cells", "c1=http://127.0.0.1:1,c2"); code != exitUsage ||
		!strings.Contains(stderr, `"c2" is not cell=address`) {
		t.Fatalf("a --cells entry without '=': exit %d, stderr %q", code, stderr)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close() // nothing listens there now
	if code, _, stderr := ctl(t, "audit", "--etcd", closed, "--campaign", "demo"); code != exitUsage ||
		!strings.Contains(stderr, "etcd at "+closed+" did not answer") {
		t.Fatalf("an etcd that does not answer: exit %d, stderr %q", code, stderr)
	}
}

// cells publish refuses, as a usage error (exit 2) before it reaches etcd,
// a payment window no cell would define: above a day.
func TestCellsPublishPaymentWindowBound(t *testing.T) {
	code, out, errOut := ctl(t, "cells", "publish", "--etcd", "127.0.0.1:1", "--campaign", "pw", "--sku", "a", "--sale-limit", "10",
		"--cells", "c1", "--payment-window", "25h")
	if code != exitUsage || out != "" || !strings.Contains(errOut, "payment_window must be at most 24h") {
		t.Fatalf("publish --payment-window 25h: exit %d\nstdout: %q\nstderr: %s", code, out, errOut)
	}
}

// testLedger dials the etcd at endpoint and returns its ledger (the
// default prefix) and a context of 10 s, both ended with the test.
func testLedger(t *testing.T, endpoint string) (*ledger.Ledger, context.Context) {
	t.Helper()
	client, err := ledger.Dial([]string{endpoint})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ledger.New(client, ""), ctx
}
