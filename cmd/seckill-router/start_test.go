package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/etcdtest"
	"github.com/seckill/seckill/ledger"
	"github.com/seckill/seckill/replica"
)

// TestStartedRouterSendsASetToItsPrimary: a router (re)started while a
// replica set leads sends the set's first request to its primary, as etcd
// names it, never to the set's --cells address, which serves the set only
// while it is no replica set ("the address given there is used only for a
// cell that is no replica set", docs/ha.md): the router listens once it
// has read the replica sets' keys.
func TestStartedRouterSendsASetToItsPrimary(t *testing.T) {
	served := func(by string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"served_by":%q}`, by)
		}))
		t.Cleanup(s.Close)
		return s
	}
	primary, static := served("primary"), served("static")
	etcd := etcdtest.Start(t)
	client, err := ledger.Dial([]string{etcd.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := replica.NewEtcd(client, ledger.DefaultPrefix, "rs1", "a", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if _, err := e.Register(ctx, replica.Member{HTTP: primary.URL, Replication: "a:1"}); err != nil {
		t.Fatal(err)
	}
	v, err := e.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Acquire(ctx, v); err != nil {
		t.Fatal(err)
	}

	stdout, w := io.Pipe()
	o := options{addr: "127.0.0.1:0", etcd: etcd.Endpoint, prefix: ledger.DefaultPrefix,
		cells: "rs1=" + strings.TrimPrefix(static.URL, "http://"), defaultCell: "rs1", timeout: 5 * time.Second}
	stop, stopRouter := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- serve(stop, o, w, slog.New(slog.DiscardHandler)); w.Close() }()
	defer func() {
		stopRouter()
		go io.Copy(io.Discard, stdout)
		if err := <-stopped; err != nil {
			t.Errorf("the router stopped with %v", err)
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the router printed %q: %v", line, err)
	}
	addr, _, _ := strings.Cut(strings.TrimPrefix(line, "seckill-router listening on "), " ")
	// A route that names no campaign goes to the default cell at once
	// (no read of a campaign's local key in etcd first).
	resp, err := http.Post(addr+"/v1/reservations/x/pay", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || string(body) != `{"served_by":"primary"}` {
		t.Fatalf("the first request after the start: %d %s, want the primary's 201", resp.StatusCode, body)
	}
}
