package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/seckill/seckill/internal/etcdtest"
	"github.com/seckill/seckill/ledger"
	"github.com/seckill/seckill/replica"
)

// TestRouterWaitsOutAFailover: a reserve sent while its replica set's
// primary in the router's table is gone (its address refuses connections,
// its key not yet expired) is not answered 503 at once: it waits for the
// set's next primary and is served by it within the router's timeout.
// Beyond maxFailoverWaits a request is answered 503 CELL_UNAVAILABLE at
// once, and so is one that found the set without a primary for half the
// timeout.
func TestRouterWaitsOutAFailover(t *testing.T) {
	srv := etcdtest.Start(t)
	client, err := ledger.Dial([]string{srv.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	next := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"served_by":"next"}`)
	}))
	t.Cleanup(next.Close)
	coords := map[string]*replica.Etcd{}
	for name, url := range map[string]string{"gone": "http://" + refusedAddr(t), "next": next.URL} {
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
	// A timeout long enough for a loaded machine's etcd to hand the key
	// over well within its half.
	r, err := newRouter(options{cells: "rs1=" + refusedAddr(t), prefix: ledger.DefaultPrefix, timeout: 20 * time.Second},
		ledger.New(client, ledger.DefaultPrefix))
	if err != nil {
		t.Fatal(err)
	}
	r.failoverWaits = make(chan struct{}, 1) // a bound of one, to reach it
	go r.primaries.Follow(ctx, client, slog.New(slog.NewTextHandler(io.Discard, nil)))

	send := func() (int, map[string]any) {
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
		for {
			if p, _ := r.primaries.Primary("rs1"); p == name {
				return h
			}
			if ctx.Err() != nil {
				t.Fatalf("the router never saw primary %q", name)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waiting := func(n int) {
		t.Helper()
		for len(r.failoverWaits) != n {
			if ctx.Err() != nil {
				t.Fatalf("%d requests wait for a primary, want %d", len(r.failoverWaits), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	held := acquire("gone")
	type answer struct {
		status int
		body   map[string]any
	}
	first := make(chan answer, 1)
	go func() {
		status, body := send()
		first <- answer{status, body}
	}()
	waiting(1)
	// The bound is reached: a second request is not held.
	if status, body := send(); status != http.StatusServiceUnavailable || body["error"] != "CELL_UNAVAILABLE" {
		t.Fatalf("beyond the bound of waiting requests: %d %v, want 503 CELL_UNAVAILABLE", status, body)
	}
	// The failover: the gone primary's key goes, the next one takes it.
	if err := coords["gone"].Release(ctx, held, []string{"next"}); err != nil {
		t.Fatal(err)
	}
	acquire("next")
	select {
	case a := <-first:
		if a.status != http.StatusCreated || a.body["served_by"] != "next" {
			t.Fatalf("the request that waited out the failover: %d %v, want 201 from the next primary", a.status, a.body)
		}
	case <-ctx.Done():
		t.Fatal("the request that waited for the next primary never answered")
	}
	waiting(0)
}
