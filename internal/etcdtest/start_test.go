package etcdtest

import (
	"bufio"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A port another process took between FreePort and etcd's bind makes
// etcd exit at once; the first start then takes other ports.
func TestStartTakesOtherPortsWhenOneWasTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	handed := 0
	freePort = func() (string, error) {
		handed++
		if handed == 1 {
			return taken.Addr().String(), nil // the client port, as if taken in between
		}
		return FreePort()
	}
	defer func() { freePort = FreePort }()

	s, err := StartIn(filepath.Join(t.TempDir(), "etcd"))
	if err != nil {
		t.Fatalf("StartIn: %v", err)
	}
	defer s.Kill()
	if s.Endpoint == taken.Addr().String() {
		t.Fatalf("the member serves on the taken port %s", s.Endpoint)
	}
	if handed < 4 {
		t.Fatalf("%d ports handed out; want a second pair after the failed start", handed)
	}
}

// A start that fails for another reason is not retried, and its error
// quotes the member's log.
func TestStartErrorQuotesTheLog(t *testing.T) {
	dir := t.TempDir()
	// A data dir that is a file: etcd cannot make its member folder.
	if err := os.WriteFile(filepath.Join(dir, "etcd"), []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := StartIn(filepath.Join(dir, "etcd"))
	if err == nil {
		s.Kill()
		t.Fatal("StartIn on a data dir that is a file succeeded")
	}
	if !strings.Contains(err.Error(), "its log ends:") || strings.HasSuffix(err.Error(), "its log ends: ") {
		t.Fatalf("error without the member's log: %v", err)
	}
}

// Start's member does not fsync its log for a write; StartIn's does, as
// production's does: etcd's own count of WAL fsyncs across a write, read
// from its /metrics (creating the log fsyncs either way).
func TestStartNeverFsyncsStartInDoes(t *testing.T) {
	test := Start(t)
	demo, err := StartIn(filepath.Join(t.TempDir(), "etcd"))
	if err != nil {
		t.Fatal(err)
	}
	defer demo.Kill()
	for _, c := range []struct {
		name string
		s    *Server
		want func(float64) bool
	}{{"Start", test, func(n float64) bool { return n == 0 }}, {"StartIn", demo, func(n float64) bool { return n > 0 }}} {
		before := walFsyncs(t, c.s)
		// A write through etcd's JSON gateway: key "k", value "v", base64.
		resp, err := http.Post("http://"+c.s.Endpoint+"/v3/kv/put", "application/json", strings.NewReader(`{"key":"aw==","value":"dg=="}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: put answered %s", c.name, resp.Status)
		}
		n := walFsyncs(t, c.s) - before
		if !c.want(n) {
			t.Errorf("%s's member: %v WAL fsyncs for a write", c.name, n)
		}
	}
}

// walFsyncs reads etcd_disk_wal_fsync_duration_seconds_count from s's
// /metrics.
func walFsyncs(t *testing.T, s *Server) float64 {
	t.Helper()
	resp, err := http.Get("http://" + s.Endpoint + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "etcd_disk_wal_fsync_duration_seconds_count "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no etcd_disk_wal_fsync_duration_seconds_count in %s's /metrics", s.Endpoint)
	return 0
}
