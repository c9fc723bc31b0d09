package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/httpapi/httpapitest"
	"github.com/seckill/seckill/internal/natstest"
	"github.com/seckill/seckill/orders/orderstest"
)

// The relay stops (exit 1) on the feed's 409 naming seckill-relay
// reanchor; "seckill-relay reanchor" with the relay's flags prints a line
// per SKU it moved onto the restored log, and the relay then goes on. A
// run with nothing diverged says so.
func TestReanchorCommand(t *testing.T) {
	nc, js := natstest.StartJetStream(t)
	dir := t.TempDir()
	serve := func() (*client.Client, *actors.Engine) {
		e, err := actors.Open(actors.Config{DataDir: dir, Logger: orderstest.Quiet})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		c, err := client.New(client.Options{BaseURL: httpapitest.Serve(t, httpapi.Config{Engine: e, Feed: feed.New(e), AdminToken: orderstest.Token, Logger: orderstest.Quiet}),
			AdminToken: orderstest.Token})
		if err != nil {
			t.Fatal(err)
		}
		return c, e
	}
	c, e := serve()
	orderstest.Define(t, c, "ra", 30)
	orderstest.Sale(t, c, "ra", 0, 20)
	args := []string{"--admin-token", orderstest.Token, "--stream", "SECKILL_RA", "--campaign", "ra", "--nats", nc.ConnectedUrl(), "--feed", c.BaseURL(), "--wait", "1s"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reanchor := func(want string) {
		t.Helper()
		var out bytes.Buffer
		if err := run(ctx, append([]string{"reanchor"}, args...), &out, io.Discard); err != nil || !strings.HasPrefix(out.String(), want) {
			t.Fatalf("reanchor: %v, %q; want %q first", err, out.String(), want)
		}
		t.Logf("%s", out.String())
	}
	// relayed runs the relay until blue's last message in the stream is
	// the event id (of the log's end: no other SKU is sold after it).
	relayed := func(id string) {
		t.Helper()
		rctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- run(rctx, args, io.Discard, io.Discard) }()
		for {
			if st, err := js.Stream(ctx, "SECKILL_RA"); err == nil {
				if m, err := st.GetLastMsgForSubject(ctx, "seckill.ra.blue.>"); err == nil && m.Header.Get(jetstream.MsgIDHeader) == id {
					break
				}
			}
			select {
			case err := <-done:
				t.Fatalf("the relay stopped: %v", err)
			case <-ctx.Done():
				t.Fatalf("the stream does not hold blue's event %s", id)
			case <-time.After(20 * time.Millisecond):
			}
		}
		stop()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	}
	reanchor("nothing diverged")
	page, err := c.Feed(ctx, client.FeedRequest{CampaignID: "ra", SKUID: "blue", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	root, _, _ := strings.Cut(page.NextCursor, "-")
	end := strconv.FormatUint(page.DurableIndex, 10)
	relayed(root + "-" + end)
	e.Close()
	// What a restore of blue to record 3 leaves in its folder for the
	// feed: the records after 3 are another history's.
	chain := feed.Chain{Root: root, Forks: []feed.Fork{{History: "00000000000000ab", ForkIndex: 3}}}
	if err := chain.Write(filepath.Join(dir, "ra", "blue")); err != nil {
		t.Fatal(err)
	}
	c, _ = serve()
	args[len(args)-3] = c.BaseURL()

	var status bytes.Buffer
	if code := exitStatus(run(ctx, args, io.Discard, io.Discard), &status); code != 1 || !strings.Contains(status.String(), "run seckill-relay reanchor") {
		t.Fatalf("the relay on a diverged feed: exit %d, %q; want 1 and the way forward", code, status.String())
	}
	reanchor("SKU blue: restored after record 3 (history 00000000000000ab)")
	reanchor("nothing diverged")
	relayed("00000000000000ab-" + end) // the restored log's records after 3 are history ab's
}
