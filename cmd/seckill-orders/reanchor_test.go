package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/orders"
	"github.com/seckill/seckill/orders/orderstest"
)

// The service stops (exit 1) on the feed's 409 with the command to run;
// "seckill-orders reanchor" prints what it set apart, SKU by SKU, and the
// service then runs again on the restored feed. A run with nothing
// diverged says so (and migrates the schema, as the service does).
func TestReanchorCommand(t *testing.T) {
	db := orderstest.Database(t)
	dir := t.TempDir()
	c, e := orderstest.SeckillOn(t, actors.Config{DataDir: dir})
	orderstest.Define(t, c, "ra", 30)
	orderstest.Sale(t, c, "ra", 0, 20)
	args := []string{"--database", db, "--feed", c.BaseURL(), "--admin-token", orderstest.Token, "--campaign", "ra"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, append([]string{"reanchor"}, args...), &out, io.Discard); err != nil || !strings.HasPrefix(out.String(), "nothing diverged") {
		t.Fatalf("reanchor with nothing diverged (the schema migrated first): %v, %q", err, out.String())
	}
	sctx, stopService := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() {
		stopped <- run(sctx, append(args, "--metrics-addr", "", "--wait", "1s"), io.Discard, io.Discard)
	}()
	orderstest.WaitClean(t, c, db, "ra")
	stopService()
	<-stopped
	page, err := c.Feed(context.Background(), client.FeedRequest{CampaignID: "ra", SKUID: "blue", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	root, _, _ := strings.Cut(page.NextCursor, "-")
	e.Close()
	// What a restore of blue to record 3 leaves in its folder for the
	// feed: the records after 3 are another history's.
	chain := feed.Chain{Root: root, Forks: []feed.Fork{{History: "00000000000000ab", ForkIndex: 3}}}
	if err := chain.Write(filepath.Join(dir, "ra", "blue")); err != nil {
		t.Fatal(err)
	}
	c, _ = orderstest.SeckillOn(t, actors.Config{DataDir: dir})
	args[3] = c.BaseURL()

	err = run(ctx, append(args, "--metrics-addr", "", "--wait", "1s"), io.Discard, io.Discard)
	if !errors.Is(err, orders.ErrPosition) || !strings.Contains(err.Error(), "seckill-orders reanchor --campaign ra") {
		t.Fatalf("the service on a diverged feed returned %v, want the way forward", err)
	}
	out.Reset()
	if err := run(ctx, append([]string{"reanchor"}, args...), &out, io.Discard); err != nil {
		t.Fatalf("reanchor: %v\n%s", err, out.String())
	}
	t.Logf("%s", out.String())
	if !strings.HasPrefix(out.String(), "SKU blue: restored after record 3 (history 00000000000000ab)") || !strings.Contains(out.String(), "\n  REWOUND ra~blue~") {
		t.Fatalf("reanchor printed %q", out.String())
	}
	runInBackground(t, append(args, "--metrics-addr", "", "--wait", "1s")...)
	orderstest.WaitClean(t, c, db, "ra")
	out.Reset()
	if err := run(ctx, append([]string{"reanchor"}, args...), &out, io.Discard); err != nil || !strings.HasPrefix(out.String(), "nothing diverged") {
		t.Fatalf("reanchor again: %v, %q", err, out.String())
	}
}
