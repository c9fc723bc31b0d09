package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A start refused because its address is in use writes nothing: the data
// dir stays empty, so the demo campaign's window starts at a start that
// serves.
func TestRefusedStartWritesNothing(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	data := filepath.Join(t.TempDir(), "data")
	var out, errOut bytes.Buffer
	code := run([]string{"--addr", busy.Addr().String(), "--data-dir", data, "--admin-token", "t"}, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "address already in use") {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut.String())
	}
	if entries, err := os.ReadDir(data); !os.IsNotExist(err) {
		t.Fatalf("the refused start wrote %d entries into the data dir (%v)", len(entries), err)
	}
}

// --help lists every flag with its SECKILL_ variable on stdout, exit 0;
// --version prints the build's version line.
func TestHelpAndVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"--help"}, &out, &errOut); code != 0 {
		t.Fatalf("--help: exit %d, stderr %s", code, errOut.String())
	}
	for _, want := range []string{"--data-dir, SECKILL_DATA_DIR", "--admin-token, SECKILL_ADMIN_TOKEN", "--max-skus, SECKILL_MAX_SKUS", "(default ./data)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := run([]string{"--version"}, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "seckilld ") {
		t.Fatalf("--version: exit %d, %q", code, out.String())
	}
}
