package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/seckill/seckill/internal/etcdtest"
	"github.com/seckill/seckill/ledger"
	"github.com/seckill/seckill/replica"
)

// reserveThrough sends a reserve (user u1, request r1) of campaign demo's
// SKU skuID through r and returns its status, Retry-After and body.
func reserveThrough(t testing.TB, r *router, skuID string) (int, string, map[string]any) {
	t.Helper()
	var c fasthttp.RequestCtx
	c.Request.Header.SetMethod("POST")
	c.Request.SetRequestURI("/v1/campaigns/demo/skus/" + skuID + "/reservations")
	c.Request.SetHost("router")
	c.Request.SetBodyString(`{"user_id":"u1","request_id":"r1"}`)
	r.handle(&c)
	var body map[string]any
	json.Unmarshal(c.Response.Body(), &body)
	return c.Response.StatusCode(), string(c.Response.Header.Peek("Retry-After")), body
}

// setRouter is a router with --timeout timeout following replica set rs1
// on a private etcd, whose members (name → HTTP URL) are registered and
// none leads; ctx bounds the test.
type setRouter struct {
	t      *testing.T
	ctx    context.Context
	r      *router
	coords map[string]*replica.Etcd
}

func newSetRouter(t *testing.T, members map[string]string, timeout time.Duration) *setRouter {
	srv := etcdtest.Start(t)
	client, err := ledger.Dial([]string{srv.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	s := &setRouter{t: t, ctx: ctx, coords: map[string]*replica.Etcd{}}
	for name, url := range members {
		e, err := replica.NewEtcd(client, ledger.DefaultPrefix, "rs1", name, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		if _, err := e.Register(ctx, replica.Member{HTTP: url, Replication: name + ":1"}); err != nil {
			t.Fatal(err)
		}
		s.coords[name] = e
	}
	s.r, err = newRouter(options{cells: "rs1=" + refusedAddr(t), prefix: ledger.DefaultPrefix, timeout: timeout}, ledger.New(client, ledger.DefaultPrefix))
	if err != nil {
		t.Fatal(err)
	}
	go s.r.primaries.Follow(ctx, client, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for !s.r.primaries.Known("rs1") {
		if ctx.Err() != nil {
			t.Fatal("the router never saw the members")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return s
}

// acquire has member name take rs1's leader key and waits until the
// router's table names it.
func (s *setRouter) acquire(name string) replica.Holding {
	s.t.Helper()
	v, err := s.coords[name].Read(s.ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	h, err := s.coords[name].Acquire(s.ctx, v)
	if err != nil {
		s.t.Fatalf("%s acquires: %v", name, err)
	}
	for {
		if p, _ := s.r.primaries.Primary("rs1"); p == name {
			return h
		}
		if s.ctx.Err() != nil {
			s.t.Fatalf("the router never saw primary %q", name)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// answer is a reserve's answer through the router.
type answer struct {
	status int
	body   map[string]any
}

// reserveLater sends a reserve (reserveThrough) in the background; its
// answer comes on the channel.
func (s *setRouter) reserveLater() <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		status, _, body := reserveThrough(s.t, s.r, "sku-1")
		ch <- answer{status, body}
	}()
	return ch
}

// handOver has member from give rs1's leader key (held) to member to, and
// waits until the router's table names to.
func (s *setRouter) handOver(from string, held replica.Holding, to string) {
	s.t.Helper()
	if err := s.coords[from].Release(s.ctx, held, []string{to}); err != nil {
		s.t.Fatal(err)
	}
	s.acquire(to)
}

// servedByNext fails the test unless the answer on ch, of the request
// what names, is a 201 from the member whose server answers
// {"served_by":"next"}.
func (s *setRouter) servedByNext(ch <-chan answer, what string) {
	s.t.Helper()
	select {
	case a := <-ch:
		if a.status != http.StatusCreated || a.body["served_by"] != "next" {
			s.t.Fatalf("%s: %d %v, want 201 from the next primary", what, a.status, a.body)
		}
	case <-s.ctx.Done():
		s.t.Fatalf("%s: never answered", what)
	}
}
