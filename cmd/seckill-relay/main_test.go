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

// A --campaign no campaign can have is a bad flag, refused before NATS or
// seckilld is asked (not a 404 from the feed once NATS answered).
func TestRefusesAMalformedCampaign(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"--admin-token", "t", "--stream", "S", "--campaign", "bad id",
		"--nats", "nats://127.0.0.1:1", "--feed", "http://127.0.0.1:1"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), `--campaign "bad id"`) {
		t.Fatalf("--campaign \"bad id\": %v", err)
	}
}
