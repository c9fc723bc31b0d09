package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/seckill/seckill/internal/etcdtest"
	"github.com/seckill/seckill/ledger"
	"github.com/seckill/seckill/replica"
)

// The router sends a replica set's requests to its primary as etcd names
// it (a watch of the leader and member keys), follows a standby's 421
// NOT_PRIMARY to the primary it names once, answers 503 CELL_UNAVAILABLE
// while the set has no primary (nothing delivered), and 504
// RESULT_UNKNOWN with the lookup URL for a reserve its primary read and
// never answered.
func TestRouterFollowsThePrimary(t *testing.T) {
	srv := etcdtest.Start(t)
	client, err := ledger.Dial([]string{srv.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// a serves; b is its standby and answers NOT_PRIMARY naming a.
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"served_by":"a"}`)
	}))
	t.Cleanup(a.Close)
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", a.URL+r.URL.Path)
		w.WriteHeader(http.StatusMisdirectedRequest)
		fmt.Fprintf(w, `{"error":"NOT_PRIMARY","replica_set":"rs1","primary":"a","address":%q}`, a.URL)
	}))
	t.Cleanup(b.Close)
	silent, _ := silentCell(t)

	coords := map[string]*replica.Etcd{}
	for name, url := range map[string]string{"a": a.URL, "b": b.URL, "c": "http://" + silent} {
		e, err := replica.NewEtcd(client, ledger.DefaultPrefix, "rs1", name, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		if _, err := e.Register(ctx, replica.Member{HTTP: url, Replication: name + ":1"}); err != nil {
			t.Fatal(err)
		}
		coords[name] = e
	}
	r, err := newRouter(options{cells: "rs1=" + refusedAddr(t), prefix: ledger.DefaultPrefix, timeout: 300 * time.Millisecond}, ledger.New(client, ledger.DefaultPrefix))
	if err != nil {
		t.Fatal(err)
	}
	go r.primaries.Follow(ctx, client, slog.New(slog.NewTextHandler(io.Discard, nil)))

	send := func() (int, map[string]any) {
		t.Helper()
		var c fasthttp.RequestCtx
		c.Request.Header.SetMethod("POST")
		c.Request.SetRequestURI("/v1/campaigns/demo/skus/sku-1/reservations")
		c.Request.SetHost("router")
		c.Request.SetBodyString(`{"user_id":"u1","request_id":"r1"}`)
		r.handle(&c)
		var body map[string]any
		json.Unmarshal(c.Response.Body(), &body)
		return c.Response.StatusCode(), body
	}
	waitPrimary := func(want string) {
		t.Helper()
		for {
			if name, _ := r.primaries.Primary("rs1"); name == want {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("the router never saw primary %q", want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	// Members but no leader: between primaries, nothing is sent.
	for !r.primaries.Known("rs1") {
		if ctx.Err() != nil {
			t.Fatal("the router never saw the members")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if status, body := send(); status != http.StatusServiceUnavailable || body["error"] != "CELL_UNAVAILABLE" {
		t.Fatalf("no primary: %d %v", status, body)
	}

	acquire := func(name string) replica.Holding {
		t.Helper()
		v, err := coords[name].Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		h, err := coords[name].Acquire(ctx, v)
		if err != nil {
			t.Fatalf("%s acquires: %v", name, err)
		}
		waitPrimary(name)
		return h
	}
	// b holds the key (the router's table says b; b itself says a leads,
	// as a standby whose view is ahead of the router's would): the 421 is
	// followed to a once.
	hb := acquire("b")
	if status, body := send(); status != http.StatusCreated || body["served_by"] != "a" {
		t.Fatalf("via b's NOT_PRIMARY: %d %v", status, body)
	}
	if err := coords["b"].Release(ctx, hb, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	ha := acquire("a")
	if status, body := send(); status != http.StatusCreated || body["served_by"] != "a" {
		t.Fatalf("to a: %d %v", status, body)
	}

	// c leads and dies with the request read: RESULT_UNKNOWN with the
	// request's lookup URL.
	if err := coords["a"].Release(ctx, ha, []string{"c"}); err != nil {
		t.Fatal(err)
	}
	acquire("c")
	status, body := send()
	if status != http.StatusGatewayTimeout || body["error"] != "RESULT_UNKNOWN" ||
		!strings.HasSuffix(fmt.Sprint(body["status_url"]), "/v1/campaigns/demo/skus/sku-1/requests/r1") {
		t.Fatalf("a primary that never answered: %d %v", status, body)
	}
}
