package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/httpapi/httpapitest"
	"github.com/seckill/seckill/internal/natstest"
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

// A usage error, from an unknown flag to a --stream name NATS does not
// take, is found before anything is contacted and exits 2 with one line
// naming the flag; a refusal by the feed or NATS exits 1, a stop 0.
func TestUsageErrorsExitTwo(t *testing.T) {
	required := []string{"--admin-token", "t", "--stream", "S", "--campaign", "c", "--nats", "nats://127.0.0.1:1", "--feed", "http://127.0.0.1:1"}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--no-such-flag"}, "flag provided but not defined: -no-such-flag"},
		{nil, "--admin-token, --stream and --campaign are required"},
		{append(required, "--limit", "0"), "--limit must be 1..1000"},
		{append(required, "--wait", "61s"), "--wait must be in (0, 60s]"},
		{append(required, "--campaign", "bad id"), `--campaign "bad id"`},
		{append(required, "--cell", "c 1"), `--cell "c 1"`},
		{append(required, "--log-level", "loud"), "--log-level"},
		{append(required, "--stream", "a.b"), `--stream: relay: invalid stream name "a.b"`},
		{append(required, "extra"), "unexpected arguments: [extra]"},
		// Before NATS is dialled, as every usage error.
		{append(required, "--feed", "nonsense"), `--feed: client: base URL "nonsense": give http://host:port`},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), c.args, &out, &errOut)
		var status bytes.Buffer
		if code := exitStatus(err, &status); code != 2 || strings.Count(status.String(), "\n") != 1 ||
			!strings.HasPrefix(status.String(), "seckill-relay: usage: ") || !strings.Contains(status.String(), c.says) {
			t.Errorf("%v: exit %d, %q; want 2 and one line saying %q", c.args, code, status.String(), c.says)
		}
	}
	var status bytes.Buffer
	if code := exitStatus(errors.New("relay: seckilld has no campaign"), &status); code != 1 {
		t.Errorf("a refusal: exit %d, want 1", code)
	}
	if code := exitStatus(context.Canceled, &status); code != 0 {
		t.Errorf("a stop: exit %d, want 0", code)
	}
}

// A --feed with a path under which no seckilld serves exits 1 with one
// line saying the feed URL answered 404 and the form --feed takes, not
// that seckilld has no such campaign.
func TestWrongFeedPathExitsOneSayingSo(t *testing.T) {
	nc := natstest.Start(t)
	e, err := actors.Open(actors.Config{DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	base := httpapitest.Serve(t, httpapi.Config{Engine: e, Feed: feed.New(e), AdminToken: "t", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut, status bytes.Buffer
	err = run(ctx, []string{"--admin-token", "t", "--stream", "S", "--campaign", "demo", "--nats", nc.ConnectedUrl(), "--feed", base + "/seckill"}, &out, &errOut)
	if code := exitStatus(err, &status); code != 1 || strings.Count(status.String(), "\n") != 1 ||
		strings.Contains(status.String(), "no campaign") || !strings.Contains(status.String(), "a wrong path?") ||
		!strings.Contains(status.String(), "such as http://127.0.0.1:8080") {
		t.Fatalf("exit %d: %q", code, status.String())
	}
}
