package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/natstest"
	"github.com/seckill/seckill/orders/orderstest"
	"github.com/seckill/seckill/relay/relaytest"
)

// seckilld started on an older copy of its data dir, which sold past the
// stream's position, as docs/feed.md's "After a restore of seckilld" has
// the operator meet it: the relay stops (exit 1) naming seckill-relay
// reanchor; "seckill-relay reanchor" with the relay's flags prints a line
// per SKU naming the older copy and the messages it set apart; the relay
// then follows the copy, each of the copy's events after the fork stored
// once after the SKU's marker; and reanchor run again finds nothing.
func TestReanchorCommandAfterAnOlderCopy(t *testing.T) {
	nc, js := natstest.StartJetStream(t)
	source, older := t.TempDir(), t.TempDir()
	c, e := orderstest.SeckillOn(t, actors.Config{DataDir: source})
	orderstest.Define(t, c, "rc", 30)
	args := []string{"--admin-token", orderstest.Token, "--stream", "SECKILL_RC", "--campaign", "rc", "--nats", nc.ConnectedUrl(), "--feed", c.BaseURL(), "--wait", "1s"}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// relayed runs the relay until each SKU's last message in the stream
	// is the SKU's last event in c's feed, within a minute: well within
	// the stream's duplicate window (2 minutes), which the copy's events
	// re-using the abandoned ids do not wait out.
	relayed := func(c *client.Client) {
		t.Helper()
		args[len(args)-3] = c.BaseURL()
		last := map[string]string{}
		for _, s := range orderstest.SKUs {
			events := skuEvents(t, c, s)
			last[s] = events[len(events)-1].ID
		}
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		rctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- run(rctx, args, io.Discard, io.Discard) }()
		for held := 0; held < len(last); {
			held = 0
			if st, err := js.Stream(ctx, "SECKILL_RC"); err == nil {
				for s, id := range last {
					var e client.Event // the event's own id: the copy's events re-using an abandoned id have no Nats-Msg-Id
					if m, err := st.GetLastMsgForSubject(ctx, "seckill.rc."+strings.ReplaceAll(s, ".", "%2E")+".>"); err == nil && json.Unmarshal(m.Data, &e) == nil && e.ID == id {
						held++
					}
				}
			}
			select {
			case err := <-done:
				t.Fatalf("the relay stopped: %v", err)
			case <-wctx.Done():
				stop()
				<-done
				t.Fatalf("the stream does not hold the SKUs' last events %v within a minute", last)
			case <-time.After(20 * time.Millisecond):
			}
		}
		stop()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	}
	orderstest.Sale(t, c, "rc", 0, 20)
	relayed(c)
	copied := durableOf(t, c)
	e.Close()
	if out, err := exec.Command("cp", "-a", source+"/.", older).CombinedOutput(); err != nil {
		t.Fatalf("copying the data dir: %v\n%s", err, out)
	}
	c, e = orderstest.SeckillOn(t, actors.Config{DataDir: source})
	orderstest.Sale(t, c, "rc", 20, 40) // records the copy lacks
	relayed(c)
	abandoned := map[string][]string{}
	for _, s := range orderstest.SKUs {
		for _, ev := range skuEvents(t, c, s) {
			if ev.SeckillIndex > copied[s] {
				abandoned[s] = append(abandoned[s], ev.ID)
			}
		}
	}
	reached := durableOf(t, c)
	e.Close()

	c, _ = orderstest.SeckillOn(t, actors.Config{DataDir: older})
	for from := 100; ; from += 10 {
		if now := durableOf(t, c); now["red.1"] > reached["red.1"] && now["blue"] > reached["blue"] {
			break
		}
		orderstest.Sale(t, c, "rc", from, from+10)
	}
	args[len(args)-3] = c.BaseURL()
	var status bytes.Buffer
	if code := exitStatus(run(ctx, args, io.Discard, io.Discard), &status); code != 1 || !strings.Contains(status.String(), "run seckill-relay reanchor") {
		t.Fatalf("the relay on the older copy: exit %d, %q; want 1 and the way forward", code, status.String())
	}
	t.Logf("%s", status.String())
	var out bytes.Buffer
	if err := run(ctx, append([]string{"reanchor"}, args...), &out, io.Discard); err != nil {
		t.Fatalf("reanchor: %v\n%s", err, out.String())
	}
	t.Logf("%s", out.String())
	for _, s := range orderstest.SKUs {
		last := abandoned[s][len(abandoned[s])-1]
		_, at, _ := strings.Cut(last, "-")
		line := fmt.Sprintf("SKU %s: restored after record %d (an older copy of the log, history ", s, copied[s])
		apart := fmt.Sprintf("with Seckill-Index %d to %s are of abandoned records (the stream stood at %s)\n", copied[s]+1, at, last)
		if !strings.Contains(out.String(), line) || !strings.Contains(out.String(), apart) {
			t.Fatalf("reanchor printed %q: want a line of %s saying %q and %q", out.String(), s, line, apart)
		}
	}
	relayed(c)
	out.Reset()
	if err := run(ctx, append([]string{"reanchor"}, args...), &out, io.Discard); err != nil || !strings.HasPrefix(out.String(), "nothing diverged") {
		t.Fatalf("reanchor again: %v, %q", err, out.String())
	}

	msgs := relaytest.StreamMessages(t, js, "SECKILL_RC")
	for _, s := range orderstest.SKUs {
		before, after, marker := relaytest.AroundMarker(msgs, s, copied[s])
		if marker < 0 {
			t.Fatalf("no marker of %s", s)
		}
		var fromCopy []string
		for _, ev := range skuEvents(t, c, s) {
			if ev.SeckillIndex > copied[s] {
				fromCopy = append(fromCopy, ev.ID)
			}
		}
		if fmt.Sprint(before) != fmt.Sprint(abandoned[s]) || len(before) == 0 {
			t.Fatalf("%s's messages before the marker past %d: %v; want the abandoned records' %v", s, copied[s], before, abandoned[s])
		}
		if fmt.Sprint(after) != fmt.Sprint(fromCopy) || len(after) == 0 {
			t.Fatalf("%s's messages after the marker: %v; want the copy's events after %d once each: %v", s, after, copied[s], fromCopy)
		}
	}
}

// durableOf returns each SKU's durable log index in campaign rc.
func durableOf(t *testing.T, c *client.Client) map[string]uint64 {
	t.Helper()
	at := map[string]uint64{}
	for _, s := range orderstest.SKUs {
		page, err := c.Feed(context.Background(), client.FeedRequest{CampaignID: "rc", SKUID: s, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		at[s] = page.DurableIndex
	}
	return at
}

// skuEvents reads a SKU's whole retained feed of campaign rc.
func skuEvents(t *testing.T, c *client.Client, skuID string) []client.Event {
	t.Helper()
	var out []client.Event
	for cursor := ""; ; {
		page, err := c.Feed(context.Background(), client.FeedRequest{CampaignID: "rc", SKUID: skuID, After: cursor, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Events) == 0 {
			return out
		}
		out = append(out, page.Events...)
		cursor = page.NextCursor
	}
}
