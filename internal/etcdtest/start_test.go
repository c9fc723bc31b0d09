package etcdtest

import (
	"net"
	"os"
	"path/filepath"
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
