package main

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/seckill/seckill/internal/etcdtest"
	"github.com/seckill/seckill/ledger"
)

// A cells command without the flags naming what it acts on says which
// are missing, with its usage (exit 2), before etcd is asked: not a
// message about an empty cell map or an empty campaign, nor a return
// request written under an empty campaign and SKU.
func TestCellsCommandsNameWhatIsMissing(t *testing.T) {
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"cells", "publish", "--etcd", "127.0.0.1:1"}, "cells publish: --campaign, --sku, --sale-limit and --cells are missing"},
		{[]string{"cells", "publish", "--etcd", "127.0.0.1:1", "--campaign", "x", "--sku", "y", "--sale-limit", "10"}, "cells publish: --cells is missing"},
		{[]string{"cells", "return", "--etcd", "127.0.0.1:1", "--cell", "c2", "--units", "5", "--id", "1"}, "cells return: --campaign and --sku are missing"},
		{[]string{"audit", "--etcd", "127.0.0.1:1"}, "audit: --campaign is missing"},
	} {
		code, out, errOut := ctl(t, c.args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, c.says) || !strings.Contains(errOut, "usage:") {
			t.Errorf("seckillctl %s: exit %d, stdout %q, stderr %q, want 2 and %q", strings.Join(c.args, " "), code, out, errOut, c.says)
		}
	}
}

// "cells return" refuses an argument it cannot use as the other cells
// commands do: a usage error naming the flag, with its usage (exit 2),
// before etcd is asked. An --campaign or --sku that is not an id went to
// etcd and came back as etcd's error, without the usage, while a --cell
// that is not an id was a usage error; a --units beyond 32 bits was cut
// to its low bits and asked for.
func TestCellsReturnRefusesAnArgumentItCannotUse(t *testing.T) {
	ret := []string{"cells", "return", "--etcd", "127.0.0.1:1", "--id", "1"}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--campaign", "a/b", "--sku", "s", "--cell", "c1", "--units", "5"}, `cells return: --campaign "a/b" is not an id`},
		{[]string{"--campaign", "c", "--sku", "s~1", "--cell", "c1", "--units", "5"}, `cells return: --sku "s~1" is not an id`},
		{[]string{"--campaign", "c", "--sku", "s", "--cell", "c/1", "--units", "5"}, `cells return: --cell "c/1" is not an id`},
		{[]string{"--campaign", "c", "--sku", "s", "--cell", "c1", "--units", "4294967301"}, "cells return: --units must be 1..1073741824"},
	} {
		args := append(slices.Clone(ret), c.args...)
		code, out, errOut := ctl(t, args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, c.says) || !strings.Contains(errOut, "usage:\n  seckillctl cells return ") {
			t.Errorf("seckillctl %s: exit %d, stdout %q, stderr %q, want 2, %q and the usage", strings.Join(args, " "), code, out, errOut, c.says)
		}
	}
}

// cells publish refuses a --sale-limit or --chunk beyond what a SKU holds
// before etcd is asked: cut to 32 bits, 4294967306 published 10.
func TestCellsPublishRefusesUnitsItCannotHold(t *testing.T) {
	pub := []string{"cells", "publish", "--etcd", "127.0.0.1:1", "--campaign", "c", "--sku", "s", "--cells", "c1,c2"}
	for _, extra := range [][]string{{"--sale-limit", "4294967306"}, {"--sale-limit", "1073741825"},
		{"--sale-limit", "100", "--chunk", "4294967297"}} {
		args := append(slices.Clone(pub), extra...)
		code, out, errOut := ctl(t, args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, "cells publish: --sale-limit and --chunk must be at most 1073741824") {
			t.Errorf("seckillctl %s: exit %d, stdout %q, stderr %q, want 2 and the bound", strings.Join(args, " "), code, out, errOut)
		}
	}
}

// "cells return" asks only a cell of the SKU's map, of a SKU published:
// a request to another cell, or of a SKU etcd does not hold, would be
// written where no cell ever reads it while the command said it asked.
func TestCellsReturnAsksOnlyACellOfThePublishedSKU(t *testing.T) {
	etcd := etcdtest.Start(t)
	wantCode(t, 0, "cells", "publish", "--etcd", etcd.Endpoint, "--campaign", "demo", "--sku", "sku-1", "--sale-limit", "100",
		"--cells", "c1,c2", "--initial", "20")
	ret := func(campaign, skuID, cell string) (int, string, string) {
		return ctl(t, "cells", "return", "--etcd", etcd.Endpoint, "--campaign", campaign, "--sku", skuID, "--cell", cell, "--units", "5", "--id", "1")
	}
	if code, out, errOut := ret("demo", "sku-1", "c9"); code != exitUsage || out != "" || !strings.Contains(errOut, "cell c9 is not in the cell map of demo/sku-1 ([c1 c2])") {
		t.Errorf("a return of a cell outside the map: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, errOut := ret("demo", "nope", "c1"); code == exitOK || out != "" || !strings.Contains(errOut, "demo/nope") {
		t.Errorf("a return of a SKU never published: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, errOut := ret("demo", "sku-1", "c2"); code != exitOK || !strings.Contains(out, `"asked":"c2"`) {
		t.Fatalf("a return of c2: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	l, ctx := testLedger(t, etcd.Endpoint)
	for _, c := range []struct {
		s    ledger.SKU
		cell string
		want bool
	}{
		{ledger.SKU{Campaign: "demo", SKU: "sku-1"}, "c9", false},
		{ledger.SKU{Campaign: "demo", SKU: "nope"}, "c1", false},
		{ledger.SKU{Campaign: "demo", SKU: "sku-1"}, "c2", true},
	} {
		if _, found, err := l.ReturnRequest(ctx, c.s, c.cell); err != nil || found != c.want {
			t.Errorf("return request of %v for %s in etcd: found %v (%v), want %v", c.s, c.cell, found, err, c.want)
		}
	}
}

// A cell that refuses the admin token (401) stops the audit with exit 2
// and the reason, printing nothing on stdout, as "ha status" does: every
// cell takes the one --admin-token, so the audit could read none of them,
// and an audit of no cell is no "ok".
func TestCellsAuditStopsOnARefusedToken(t *testing.T) {
	etcd := etcdtest.Start(t)
	wantCode(t, 0, "cells", "publish", "--etcd", etcd.Endpoint, "--campaign", "demo", "--sku", "sku-1", "--sale-limit", "100",
		"--cells", "c1,c2", "--initial", "20")
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":"UNAUTHORIZED","detail":"admin bearer token wrong"}`))
	}))
	t.Cleanup(refusing.Close)
	code, out, errOut := ctl(t, "audit", "--etcd", etcd.Endpoint, "--campaign", "demo", "--admin-token", "wrong",
		"--cells", "c1="+refusing.URL+",c2="+refusing.URL)
	if code != exitUsage || out != "" || !strings.Contains(errOut, "cell c1 at "+refusing.URL) || !strings.Contains(errOut, "the admin token was refused") {
		t.Fatalf("an audit whose token the cells refuse: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
