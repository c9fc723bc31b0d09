package main

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/ledger"
)

// --help prints the flags on stdout and --version the build's version
// line, both with exit 0 and without the required --etcd and --cells.
func TestHelpAndVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"--help"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "-default-cell") {
		t.Fatalf("--help: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	out.Reset()
	if code := run([]string{"--version"}, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "seckill-router ") || !strings.Contains(out.String(), "go1.") {
		t.Fatalf("--version: exit %d, %q, stderr %q", code, out.String(), errOut.String())
	}
}

// Without --etcd and --cells the router refuses with a usage error (2).
func TestMissingRequiredFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(nil, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "--etcd and --cells are required") {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
}

// A --timeout that is not positive (every request would time out at
// once), a --default-cell that is none of --cells (every request no cell
// claims would be answered 503), a --cells address that is no host:port or
// an argument the router does not take is a usage error (2) naming it.
func TestBadTimeoutAndArguments(t *testing.T) {
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--timeout", "0s"}, "--timeout must be positive, not 0s"},
		{[]string{"--timeout", "-1s"}, "--timeout must be positive, not -1s"},
		{[]string{"extra"}, "unexpected arguments: [extra]"},
		{[]string{"--default-cell", "c2"}, "--default-cell c2 is not one of --cells (c1)"},
		{[]string{"--cells", "c1=bad"}, `--cells: cell c1: "bad" is not host:port (or http://host:port)`},
		// Addresses no listen or dial could use: refused before etcd is
		// asked, not a listen failing after it (exit 1), nor a cell every
		// request to which fails.
		{[]string{"--cells", "c1=127.0.0.1:99999"}, `--cells: cell c1: "127.0.0.1:99999" is not host:port (or http://host:port)`},
		{[]string{"--addr", "nonsense"}, `--addr "nonsense" is not host:port (missing port in address)`},
		{[]string{"--addr", "127.0.0.1:99999"}, `--addr "127.0.0.1:99999": the port must be a number 0..65535`},
	} {
		var out, errOut bytes.Buffer
		args := append([]string{"--etcd", "127.0.0.1:1", "--cells", "c1=127.0.0.1:1"}, c.args...)
		if code := run(args, &out, &errOut); code != 2 || errOut.String() != "seckill-router: "+c.says+"\n" {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", c.args, code, errOut.String(), c.says)
		}
	}
}

// A --cells address may be written as a URL, as the cells' own addresses
// are (seckillctl audit --cells, the replicas' member keys): the router
// dials its host:port, not a URL it cannot dial (every request 503).
func TestCellsAddressAsURL(t *testing.T) {
	o, err := parse([]string{"--etcd", "127.0.0.1:1", "--cells", "c1=http://127.0.0.1:8081/,c2=127.0.0.1:8082"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	r, err := newRouter(o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.static["c1"].Addr; got != "127.0.0.1:8081" {
		t.Fatalf("c1 is dialled at %q, want 127.0.0.1:8081", got)
	}
	if got := r.static["c2"].Addr; got != "127.0.0.1:8082" {
		t.Fatalf("c2 is dialled at %q, want 127.0.0.1:8082", got)
	}
}

// An etcd that does not answer at start is said at once, naming it, not
// after the router's whole wait with nothing on its output; the error at
// the end of the wait names it too.
func TestStartWithEtcdUnreachable(t *testing.T) {
	addr := refusedAddr(t)
	client, err := ledger.Dial([]string{addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	w := mapsWait{attempts: 2, timeout: 200 * time.Millisecond, pause: 10 * time.Millisecond}
	_, err = w.await(ledger.New(client, ledger.DefaultPrefix), addr, log)
	if err == nil || !strings.Contains(err.Error(), "etcd at "+addr+" did not answer within 410ms") {
		t.Fatalf("the wait ended with %v, want etcd named", err)
	}
	if got := logged.String(); strings.Count(got, "etcd does not answer") != 1 || !strings.Contains(got, "etcd="+addr) {
		t.Fatalf("logged %q, want one warning naming etcd", got)
	}
}
