package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/orders"
	"github.com/seckill/seckill/orders/orderstest"
)

// seckilld started on an older copy of its data dir, which sold past the
// service's cursor: the service stops (exit 1) with the command to run,
// as on the feed's 409; "seckill-orders reanchor" names the older copy on
// each SKU's line, and the service then follows the copy, clean.
func TestReanchorCommandAfterAnOlderCopy(t *testing.T) {
	db := orderstest.Database(t)
	source, older := t.TempDir(), t.TempDir()
	c, e := orderstest.SeckillOn(t, actors.Config{DataDir: source})
	orderstest.Define(t, c, "rb", 30)
	args := []string{"--database", db, "--feed", c.BaseURL(), "--admin-token", orderstest.Token, "--campaign", "rb"}
	service := func(c *client.Client, from, to int) {
		t.Helper()
		args[3] = c.BaseURL()
		sctx, stop := context.WithCancel(context.Background())
		stopped := make(chan error, 1)
		go func() {
			stopped <- run(sctx, append(args, "--metrics-addr", "", "--wait", "1s"), io.Discard, io.Discard)
		}()
		orderstest.Sale(t, c, "rb", from, to)
		orderstest.WaitClean(t, c, db, "rb")
		stop()
		if err := <-stopped; err != nil {
			t.Fatalf("seckill-orders: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, append([]string{"reanchor"}, args...), io.Discard, io.Discard); err != nil { // the schema migrated
		t.Fatal(err)
	}
	service(c, 0, 20)
	e.Close()
	if out, err := exec.Command("cp", "-a", source+"/.", older).CombinedOutput(); err != nil {
		t.Fatalf("copying the data dir: %v\n%s", err, out)
	}
	c, e = orderstest.SeckillOn(t, actors.Config{DataDir: source})
	service(c, 20, 40)
	reached := durableOf(t, c, "rb")
	e.Close()

	c, _ = orderstest.SeckillOn(t, actors.Config{DataDir: older})
	for from := 100; ; from += 10 {
		if now := durableOf(t, c, "rb"); now["red.1"] > reached["red.1"] && now["blue"] > reached["blue"] {
			break
		}
		orderstest.Sale(t, c, "rb", from, from+10)
	}
	args[3] = c.BaseURL()
	err := run(ctx, append(args, "--metrics-addr", "", "--wait", "1s"), io.Discard, io.Discard)
	if !errors.Is(err, orders.ErrPosition) || !strings.Contains(err.Error(), "seckill-orders reanchor --campaign rb") {
		t.Fatalf("the service on the older copy returned %v, want the way forward", err)
	}
	var out bytes.Buffer
	if err := run(ctx, append([]string{"reanchor"}, args...), &out, io.Discard); err != nil {
		t.Fatalf("reanchor: %v\n%s", err, out.String())
	}
	t.Logf("%s", out.String())
	if strings.Count(out.String(), "(an older copy of the log)") != 2 {
		t.Fatalf("reanchor printed %q: want a line of each SKU naming the older copy", out.String())
	}
	runInBackground(t, append(args, "--metrics-addr", "", "--wait", "1s")...)
	orderstest.WaitClean(t, c, db, "rb")
	out.Reset()
	if err := run(ctx, append([]string{"reanchor"}, args...), &out, io.Discard); err != nil || !strings.HasPrefix(out.String(), "nothing diverged") {
		t.Fatalf("reanchor again: %v, %q", err, out.String())
	}
}

// durableOf returns each SKU's durable log index in campaign.
func durableOf(t *testing.T, c *client.Client, campaign string) map[string]uint64 {
	t.Helper()
	at := map[string]uint64{}
	for _, s := range orderstest.SKUs {
		page, err := c.Feed(context.Background(), client.FeedRequest{CampaignID: campaign, SKUID: s, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		at[s] = page.DurableIndex
	}
	return at
}
