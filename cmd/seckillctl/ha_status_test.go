package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/etcdtest"
	"github.com/seckill/seckill/ledger"
	"github.com/seckill/seckill/replica"
)

// TestHARefusesWhatItCannotReport: ha status and ha switchover exit 2
// with the reason, printing nothing, when the replicas refuse the admin
// token (rather than a table calling every replica unreachable, exit 0)
// and when etcd holds nothing of the replica set named (rather than "no
// leader: a failover is in progress" for a mistyped name); so does ha
// forget of a set etcd holds nothing of (rather than "nothing to forget",
// exit 0, the record it meant left listed).
func TestHARefusesWhatItCannotReport(t *testing.T) {
	etcd := etcdtest.Start(t)
	// Two replicas, a leading, whose admin routes refuse every token.
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", "Bearer")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":"UNAUTHORIZED"}`))
	}))
	t.Cleanup(refusing.Close)
	c, err := ledger.Dial([]string{etcd.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, name := range []string{"a", "b"} {
		e, err := replica.NewEtcd(c, ledger.DefaultPrefix, "rs1", name, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		if _, err := e.Register(ctx, replica.Member{HTTP: refusing.URL, Replication: "127.0.0.1:1"}); err != nil {
			t.Fatal(err)
		}
		if name == "a" {
			if _, err := e.Acquire(ctx, replica.View{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ha", "status", "--replica-set", "rs1"}, "a (" + refusing.URL + "): GET /admin/replica: 401"},
		{[]string{"ha", "status", "--replica-set", "rs1", "--json"}, "the admin token was refused: check --admin-token"},
		{[]string{"ha", "switchover", "--replica-set", "rs1", "--to", "b"}, "a refused the switchover: 401"},
		{[]string{"ha", "status", "--replica-set", "rs2"}, "replica set rs2: etcd holds nothing under /seckill/v1/replicasets/rs2/"},
		{[]string{"ha", "switchover", "--replica-set", "rs2", "--to", "b"}, "check --replica-set and --etcd-prefix"},
		{[]string{"ha", "status", "--replica-set", "rs1", "--etcd-prefix", "/other"}, "etcd holds nothing under /other/replicasets/rs1/"},
		{[]string{"ha", "forget", "--replica-set", "rs2", "--replica", "a"}, "replica set rs2: etcd holds nothing under /seckill/v1/replicasets/rs2/"},
		{[]string{"ha", "forget", "--replica-set", "rs1", "--etcd-prefix", "/other", "--replica", "c"}, "etcd holds nothing under /other/replicasets/rs1/"},
	} {
		args := append(c.args, "--etcd", etcd.Endpoint, "--admin-token", "wrong")
		code, out, errOut := ctl(t, args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("seckillctl %s: exit %d, want %d and %q\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, exitUsage, c.want, out, errOut)
		}
	}
	// A switchover to the primary, or to a replica the set does not have,
	// is exit 1 with its reason, asking no replica (docs/ha.md).
	for _, c := range []struct{ to, want string }{
		{"a", "a is the primary already"},
		{"c", "c is not a registered replica of rs1"},
	} {
		args := []string{"ha", "switchover", "--replica-set", "rs1", "--to", c.to, "--etcd", etcd.Endpoint, "--admin-token", "wrong"}
		code, out, errOut := ctl(t, args...)
		if code != exitFailed || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("seckillctl %s: exit %d, want %d and %q\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, exitFailed, c.want, out, errOut)
		}
	}
}

// An etcd that does not answer is named in the error of ha status and ha
// switchover (exit 2, nothing on stdout), as the cells commands name it:
// "context deadline exceeded" alone does not say what was asked.
func TestHANamesAnEtcdThatDoesNotAnswer(t *testing.T) {
	closed := refusedEtcd(t)
	for _, args := range [][]string{
		{"ha", "status", "--etcd", closed, "--replica-set", "rs1", "--admin-token", "t"},
		{"ha", "switchover", "--etcd", closed, "--replica-set", "rs1", "--to", "b", "--admin-token", "t"},
	} {
		code, out, errOut := ctl(t, args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, "etcd at "+closed+" did not answer") {
			t.Errorf("seckillctl %s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, out, errOut)
		}
	}
}

// refusedEtcd is an address nothing listens on.
func refusedEtcd(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestHAStatusListsAStandbyDroppedFromTheSyncSet: a standby the primary
// dropped from the sync set, whose member key is gone (its process down:
// its lease ended), is still a row of ha status, marked not registered
// and disconnected, with the lag its primary reports; before, only the
// replicas etcd held were listed and it vanished from the status.
func TestHAStatusListsAStandbyDroppedFromTheSyncSet(t *testing.T) {
	etcd := etcdtest.Start(t)
	admin := func(body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/admin/replica" || r.Header.Get("Authorization") != "Bearer "+haToken {
				w.WriteHeader(http.StatusNotFound)
				return
			}
			w.Write([]byte(body))
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	primary := admin(`{"role":"primary","epoch":2,"primary":"a","sync":["b"],"waited":["b"],"standbys":[` +
		`{"name":"b","connected":true,"caught_up":true,"lag_records":0,"lag_ms":0},` +
		`{"name":"c","connected":false,"caught_up":false,"lag_records":42,"lag_ms":1500}]}`)
	standby := admin(`{"role":"standby","epoch":2,"primary":"a","copy":{"epoch":2,"connected":true}}`)
	c, err := ledger.Dial([]string{etcd.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, m := range []struct{ name, url string }{{"a", primary}, {"b", standby}} {
		e, err := replica.NewEtcd(c, ledger.DefaultPrefix, "rs1", m.name, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		if _, err := e.Register(ctx, replica.Member{HTTP: m.url, Replication: "127.0.0.1:1"}); err != nil {
			t.Fatal(err)
		}
		if m.name == "a" {
			h, err := e.Acquire(ctx, replica.View{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.SetSync(ctx, h, []string{"b"}); err != nil {
				t.Fatal(err)
			}
		}
	}

	st := haStatusJSON(t, etcd.Endpoint)
	if len(st.Replicas) != 3 {
		t.Fatalf("ha status lists %d replicas, want a, b and the dropped c: %+v", len(st.Replicas), st.Replicas)
	}
	dropped := st.Replicas[2]
	if dropped.Name != "c" || dropped.Role != "not registered" || dropped.InSync ||
		dropped.Connected == nil || *dropped.Connected || dropped.LagRecords == nil || *dropped.LagRecords != 42 ||
		dropped.LagMillis == nil || *dropped.LagMillis != 1500 {
		t.Fatalf("the dropped standby's row: %+v", dropped)
	}
	if st.Replicas[0].Name != "a" || st.Replicas[0].Role != "primary" || st.Replicas[1].Name != "b" || !st.Replicas[1].InSync {
		t.Fatalf("ha status: %+v", st.Replicas)
	}
	table := wantCode(t, 0, "ha", "status", "--etcd", etcd.Endpoint, "--replica-set", "rs1", "--admin-token", haToken)
	if !strings.Contains(table, "c        not registered (disconnected from the primary)  -      false    42           1500") {
		t.Fatalf("ha status:\n%s", table)
	}
}
