package relay_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/seckill/seckill/internal/lockedbuf"
	"github.com/seckill/seckill/internal/natstest"
	"github.com/seckill/seckill/relay"
)

// A relay the feed refuses says what it refused in the operator's terms
// (the admin token, the campaign) and leaves no stream behind; a relay the
// feed answers creates its stream at once, events or not.
func TestRelayRefusedLeavesNoStream(t *testing.T) {
	nc := natstest.Start(t)
	base := startSeckill(t)
	load(t, base, 0, 0) // defines campaign rl, sells nothing
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		stream, campaign, token, says string
		status                        int
	}{
		{"SECKILL_NOPE", "nope", token, `seckilld has no campaign "nope" (--campaign)`, 404},
		{"SECKILL_RL", "rl", "wrong", "seckilld refused the admin token (--admin-token)", 401},
	} {
		sink, err := relay.NewNATSSink(nc, c.stream, c.campaign)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = relay.Run(ctx, relay.Config{FeedURL: base, AdminToken: c.token, CampaignID: c.campaign, Wait: time.Second, Logger: quiet}, sink)
		cancel()
		var refused *relay.FeedError
		if !errors.As(err, &refused) || !errors.Is(err, relay.ErrFeed) || refused.Status != c.status || !strings.Contains(err.Error(), c.says) {
			t.Fatalf("%s: Run returned %v, want a %d that says %q", c.campaign, err, c.status, c.says)
		}
		if _, err := js.Stream(context.Background(), c.stream); !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Fatalf("%s: the refused relay left stream %s behind (%v)", c.campaign, c.stream, err)
		}
	}

	// The campaign exists and has no event yet: the stream is created once
	// the feed has answered its first (empty) page.
	sink, err := relay.NewNATSSink(nc, "SECKILL_RL", "rl")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- relay.Run(ctx, relay.Config{FeedURL: base, AdminToken: token, CampaignID: "rl", Wait: 50 * time.Millisecond, Logger: quiet}, sink)
	}()
	for {
		if _, err := js.Stream(context.Background(), "SECKILL_RL"); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the relay stopped: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	stop()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Run after cancel: %v", err)
	}
}

// SIGTERM stops the relay binary with exit status 0 and a log line that
// says what it did: the cursor the stream holds (its last message's) and
// the events it relayed.
func TestRelayProcessStopsOnSIGTERM(t *testing.T) {
	bin := relayBinary(t)
	nc := natstest.Start(t)
	base := startSeckill(t)
	load(t, base, 0, 10)
	want := feedIDs(t, base)
	cmd := exec.Command(bin, "--feed", base, "--admin-token", token, "--nats", nc.ConnectedUrl(), "--stream", "SECKILL_TERM",
		"--campaign", "rl", "--wait", "1s")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var st jetstream.Stream
	for {
		if st == nil {
			st, _ = js.Stream(context.Background(), "SECKILL_TERM")
		}
		if st != nil {
			if info, err := st.Info(context.Background()); err == nil && info.State.Msgs == uint64(len(want)) {
				break
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("the relay exited: %v\n%s", err, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	last, err := st.GetLastMsgForSubject(context.Background(), "seckill.rl.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err != nil {
		t.Fatalf("after SIGTERM: %v\n%s", err, stderr.String())
	}
	line := ""
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(l, `msg="relay: stopped"`) {
			line = l
		}
	}
	for _, part := range []string{"level=" + slog.LevelInfo.String(), "campaign=rl", "cursor=" + last.Header.Get(relay.HeaderCursor), fmt.Sprintf("relayed=%d", len(want))} {
		if !strings.Contains(line, part) {
			t.Fatalf("the stop's log line %q lacks %q; stderr:\n%s", line, part, stderr.String())
		}
	}
}

// A stream name NATS does not take is refused when the sink is made (and
// by seckill-relay before it connects: a usage error, exit 2), so the
// relay stops at start instead of retrying, once a second, forever, to
// find or create a stream JetStream will never accept.
func TestRelayRefusesAnInvalidStreamName(t *testing.T) {
	nc := natstest.Start(t)
	for _, name := range []string{"", "bad stream", "a.b", "a*", "a>", "a/b", `a\b`, "a\tb", "a\x00b"} {
		if _, err := relay.NewCellNATSSink(nc, name, "demo", ""); !errors.Is(err, relay.ErrStreamName) {
			t.Errorf("stream name %q: %v, want ErrStreamName", name, err)
		}
	}
	for _, name := range []string{"SECKILL_DEMO", "seckill-demo", "S%2E1"} {
		if _, err := relay.NewCellNATSSink(nc, name, "demo", "c.1"); err != nil {
			t.Errorf("stream name %q: %v", name, err)
		}
	}
}

// A second stream for one campaign (its subjects held by the first) and a
// stream whose last message is not a relay's are refused for good: Run
// returns ErrSinkRefused saying what to do, instead of retrying, once a
// second, forever.
func TestRelayStopsWhenTheSinkRefusesForGood(t *testing.T) {
	nc := natstest.Start(t)
	base := startSeckill(t)
	load(t, base, 0, 5)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "FIRST", Subjects: []string{"seckill.rl.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "FOREIGN", Subjects: []string{"other.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(context.Background(), "other.x", []byte("not a relay's")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ stream, says string }{
		{"SECOND", "creating stream SECOND with subjects seckill.rl.>"},
		{"FOREIGN", "has no Seckill-Cursor header"},
	} {
		sink, err := relay.NewNATSSink(nc, c.stream, "rl")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = relay.Run(ctx, relay.Config{FeedURL: base, AdminToken: token, CampaignID: "rl", Wait: time.Second, Logger: quiet}, sink)
		cancel()
		if !errors.Is(err, relay.ErrSinkRefused) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("stream %s: Run returned %v, want ErrSinkRefused saying %q", c.stream, err, c.says)
		}
	}
}

// A relay started before its NATS server (a deployment starts them in any
// order) waits for it, retrying as it does every error but a refusal,
// instead of exiting 1 at its first connection attempt, and then relays
// every event.
func TestRelayProcessWaitsForNATS(t *testing.T) {
	bin := relayBinary(t)
	base := startSeckill(t)
	load(t, base, 0, 10)
	want := feedIDs(t, base)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "--feed", base, "--admin-token", token, "--nats", fmt.Sprintf("nats://127.0.0.1:%d", port),
		"--stream", "SECKILL_LATE", "--campaign", "rl", "--wait", "1s")
	stderr := &lockedbuf.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer cmd.Process.Kill()
	for !strings.Contains(stderr.String(), "relay: resuming from the sink after an error") { // it tried NATS, and goes on
		select {
		case err := <-exited:
			t.Fatalf("the relay exited without NATS: %v\n%s", err, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	nc := natstest.StartOn(t, port)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; {
		if st, err := js.Stream(context.Background(), "SECKILL_LATE"); err == nil {
			if info, err := st.Info(context.Background()); err == nil && info.State.Msgs == uint64(len(want)) {
				return
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("the relay exited: %v\n%s", err, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stream did not get the %d events within a minute once NATS ran\n%s", len(want), stderr.String())
		}
	}
}
