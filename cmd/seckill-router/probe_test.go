package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A --cells address that answers GET /healthz otherwise than a seckilld
// (etcd's client port answers 404 in plain text; a router names itself in
// its Server header) is told apart from a seckilld's, and from an address
// that does not answer yet (not judged: the cell may start later).
func TestProbeTellsASeckilldFromOtherServers(t *testing.T) {
	serve := func(h http.HandlerFunc) string {
		s := httptest.NewServer(h)
		t.Cleanup(s.Close)
		return strings.TrimPrefix(s.URL, "http://")
	}
	seckilld := serve(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok"}`))
	})
	etcdPort := serve(func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	router := serve(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server", "seckill-router")
		w.Write([]byte(`{"status":"ok"}`))
	})
	o, err := parse([]string{"--etcd", "127.0.0.1:1", "--cells", "c1=" + seckilld + ",c2=" + etcdPort + ",c3=" + router + ",c4=" + refusedAddr(t)}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	r, err := newRouter(o, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cell, says string
		answered   bool
	}{
		{"c1", "", true},
		{"c2", `GET /healthz answered 404 "404 page not found\n"`, true},
		{"c3", "it is a seckill-router", true},
		{"c4", "", false},
	} {
		problem, answered := probeCell(r.static[c.cell], 5*time.Second)
		if answered != c.answered || (c.says == "") != (problem == "") || !strings.Contains(problem, c.says) {
			t.Errorf("%s: problem %q, answered %v; want %q, %v", c.cell, problem, answered, c.says, c.answered)
		}
	}
}
