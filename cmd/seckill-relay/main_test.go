package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// --help prints the flags on stdout and --version the build's version
// line, both without error (exit 0) and without the required flags.
func TestHelpAndVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, &out, &errOut); err != nil || !strings.Contains(out.String(), "-admin-token") {
		t.Fatalf("--help: %v, stdout %q, stderr %q", err, out.String(), errOut.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"--version"}, &out, &errOut); err != nil || !strings.HasPrefix(out.String(), "seckill-relay ") || !strings.Contains(out.String(), "go1.") {
		t.Fatalf("--version: %v, %q", err, out.String())
	}
}
