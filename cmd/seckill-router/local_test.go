package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/etcdtest"
	"github.com/seckill/seckill/ledger"
)

// fakeCell answers every request with its cell id in the body.
func fakeCell(t *testing.T, cell string) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(cell))
	}))
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://")
}

// An uncelled campaign is routed to the cell whose ClaimLocal holds it
// (its campaigns/<c>/local key in a real etcd), whatever --default-cell
// and the order of --cells: its reserve, its reads, its admin PUT, and
// its reservations' routes (by the campaign their id names). A campaign
// no cell claimed goes to the default cell, and is read again once
// localMissTTL has passed, so a later claim elsewhere is followed.
func TestUncelledCampaignGoesToItsLocalCell(t *testing.T) {
	etcd := etcdtest.Start(t)
	client, err := ledger.Dial([]string{etcd.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	l := ledger.New(client, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for campaign, cell := range map[string]string{"down1": "c2", "up1": "c1"} {
		if err := l.ClaimLocal(ctx, campaign, cell); err != nil {
			t.Fatal(err)
		}
	}
	cellsFlag := "c1=" + fakeCell(t, "c1") + ",c2=" + fakeCell(t, "c2")
	r, err := newRouter(options{cells: cellsFlag, defaultCell: "c2", timeout: 5 * time.Second}, l)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	r.local.now = func() time.Time { return now }
	send := func(method, path string) string {
		var c fasthttp.RequestCtx
		c.Request.Header.SetMethod(method)
		c.Request.SetRequestURI(path)
		c.Request.SetHost("router")
		if method != fasthttp.MethodGet {
			c.Request.SetBodyString(`{"request_id":"r1","user_id":"u1"}`)
		}
		r.handle(&c)
		if c.Response.StatusCode() != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, path, c.Response.StatusCode(), c.Response.Body())
		}
		return string(c.Response.Body())
	}
	downID := sku.FormatReservationID("down1", "a", 7, [16]byte{1})
	for _, tc := range []struct{ method, path, cell string }{
		{"POST", "/v1/campaigns/down1/skus/a/reservations", "c2"},
		{"GET", "/v1/campaigns/down1/skus/a", "c2"},
		{"PUT", "/admin/campaigns/down1", "c2"},
		{"GET", "/v1/reservations/" + downID, "c2"},
		{"POST", "/v1/reservations/" + downID + "/payment", "c2"},
		// claimed by c1 while --default-cell is c2
		{"POST", "/v1/campaigns/up1/skus/a/reservations", "c1"},
		{"GET", "/admin/campaigns/up1/audit", "c1"},
		{"POST", "/v1/reservations/" + sku.FormatReservationID("up1", "a", 1, [16]byte{2}) + "/cancel", "c1"},
		// no claim yet, no campaign, a malformed id: the default cell
		{"PUT", "/admin/campaigns/fresh", "c2"},
		{"GET", "/admin/campaigns", "c2"},
		{"GET", "/v1/reservations/nonsense", "c2"},
	} {
		if got := send(tc.method, tc.path); got != tc.cell {
			t.Errorf("%s %s went to %s, want %s", tc.method, tc.path, got, tc.cell)
		}
	}

	// fresh is claimed by c1 after the router read it unclaimed.
	if err := l.ClaimLocal(ctx, "fresh", "c1"); err != nil {
		t.Fatal(err)
	}
	if got := send("GET", "/v1/campaigns/fresh/skus/a"); got != "c2" {
		t.Fatalf("within localMissTTL of the read: %s, want c2 (remembered)", got)
	}
	now = now.Add(localMissTTL)
	if got := send("GET", "/v1/campaigns/fresh/skus/a"); got != "c1" {
		t.Fatalf("after localMissTTL: %s, want c1", got)
	}
	// A claim is kept for good: no etcd read needed any more.
	etcd.Kill()
	now = now.Add(time.Hour)
	if got := send("POST", "/v1/campaigns/down1/skus/a/reservations"); got != "c2" {
		t.Fatalf("with etcd down: %s, want c2 (remembered)", got)
	}
}

// A campaign the router sends to its default cell only because etcd did
// not say which cell defines it: the default cell's 404 is not passed on
// (another cell may define it: a pay of a reservation there is no "not
// found"), the buyer gets 503 LEDGER_UNREACHABLE with Retry-After; what
// the default cell knows it serves meanwhile; and a 404 for a campaign
// etcd said no cell claimed stays a 404.
func TestDefaultCellsNotFoundWithoutEtcdIsUnavailable(t *testing.T) {
	etcd := etcdtest.Start(t)
	client, err := ledger.Dial([]string{etcd.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	l := ledger.New(client, "")
	// c1 defines "mine" only; it answers 404 for any other campaign.
	c1 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.Contains(req.URL.Path, "/mine/") || strings.Contains(req.URL.Path, "/mine~") {
			_, _ = w.Write([]byte("c1"))
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":"NOT_FOUND"}`))
	}))
	t.Cleanup(c1.Close)
	r, err := newRouter(options{cells: "c1=" + strings.TrimPrefix(c1.URL, "http://") + ",c2=" + fakeCell(t, "c2"),
		defaultCell: "c1", timeout: 5 * time.Second}, l)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	r.local.now = func() time.Time { return now }
	send := func(path string) *fasthttp.Response {
		var c fasthttp.RequestCtx
		c.Request.Header.SetMethod(fasthttp.MethodPost)
		c.Request.SetRequestURI(path)
		c.Request.SetHost("router")
		c.Request.SetBodyString(`{"payment_id":"p1","amount":1}`)
		r.handle(&c)
		var resp fasthttp.Response
		c.Response.CopyTo(&resp)
		return &resp
	}
	pay := func(campaign string) string {
		return "/v1/reservations/" + sku.FormatReservationID(campaign, "a", 7, [16]byte{1}) + "/payment"
	}
	// etcd answers: no cell claimed "gone", so its 404 is the answer.
	if resp := send(pay("gone")); resp.StatusCode() != http.StatusNotFound {
		t.Fatalf("etcd up, an unclaimed campaign: %d %s, want the default cell's 404", resp.StatusCode(), resp.Body())
	}
	etcd.Kill()
	now = now.Add(localMissTTL)
	resp := send(pay("theirs"))
	if resp.StatusCode() != http.StatusServiceUnavailable || string(resp.Header.Peek("Retry-After")) != "1" ||
		!strings.Contains(string(resp.Body()), `"error":"LEDGER_UNREACHABLE"`) {
		t.Fatalf("etcd down, a campaign the default cell does not know: %d %q %s", resp.StatusCode(), resp.Header.Peek("Retry-After"), resp.Body())
	}
	if resp := send(pay("mine")); resp.StatusCode() != http.StatusOK || string(resp.Body()) != "c1" {
		t.Fatalf("etcd down, the default cell's own campaign: %d %s", resp.StatusCode(), resp.Body())
	}
}
