package relay_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/seckill/seckill/internal/natstest"
	"github.com/seckill/seckill/relay"
)

// A relay started on an empty stream after snapshots truncated the SKUs'
// logs would relay each SKU from its first retained record, and the stream
// would lack the sales before it: it stops with a *GapError naming the SKU
// instead, before it creates its stream.
func TestRelayRefusesASKUWhoseFirstRecordsAreGone(t *testing.T) {
	nc := natstest.Start(t)
	base := startTruncating(t, 0)
	deadline := time.Now().Add(time.Minute)
	sold := 0
	for ; ; sold += 20 {
		load(t, base, sold, sold+20) // snapshots are written, and the logs truncated, behind the sale
		a := do(t, http.MethodGet, base+"/admin/campaigns/rl/skus/a.1/events?limit=1", nil, true)
		b := do(t, http.MethodGet, base+"/admin/campaigns/rl/skus/b/events?limit=1", nil, true)
		if a["first_index"].(float64) > 1 && b["first_index"].(float64) > 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the logs were not truncated within a minute: first_index %v and %v", a["first_index"], b["first_index"])
		}
	}

	sink, err := relay.NewNATSSink(nc, "SECKILL_GAP", "rl")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = relay.Run(ctx, relay.Config{FeedURL: base, AdminToken: token, CampaignID: "rl", Wait: time.Second, RetryAfter: 10 * time.Millisecond, Logger: quiet}, sink)
	t.Logf("%v", err)
	var gap *relay.GapError
	if !errors.Is(err, relay.ErrCompacted) || !errors.As(err, &gap) || gap.SKUID != "a.1" || gap.FirstIndex <= 1 {
		t.Fatalf("Run on truncated logs returned %v, want a *GapError of SKU a.1", err)
	}
	js, _ := jetstream.New(nc)
	if _, err := js.Stream(context.Background(), "SECKILL_GAP"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("the refused relay left its stream behind: %v", err)
	}

	// With --types chosen, a SKU's first event relayed may rightly be past
	// its first record: that is no gap.
	sink, err = relay.NewNATSSink(nc, "SECKILL_PAID", "rl")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- relay.Run(ctx, relay.Config{FeedURL: base, AdminToken: token, CampaignID: "rl", Types: []string{"seckill.reservation.paid"},
			Wait: time.Second, RetryAfter: 10 * time.Millisecond, Logger: quiet}, sink)
	}()
	load(t, base, sold+20, sold+30) // payments, whatever the truncated logs still hold
	for deadline := time.Now().Add(time.Minute); ; {
		st, err := js.Stream(context.Background(), "SECKILL_PAID")
		if err == nil {
			if info, _ := st.Info(context.Background()); info.State.Msgs > 0 {
				break
			}
		}
		select {
		case err := <-done:
			t.Fatalf("the relay of payments stopped: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the relay of payments stored nothing within a minute")
		}
	}
	stop()
	<-done
}

// A relay stopped on a stream of SKU a.1, whose campaign gained SKU b
// whose first records snapshots truncated meanwhile, starts again from a
// cursor whose one position it has met no event of: it asks the feed
// whose that position is, and stops with a *GapError naming b instead of
// relaying b from the middle of its log.
func TestRelayRefusesASKUAddedAndTruncatedWhileItWasStopped(t *testing.T) {
	nc, js := natstest.StartJetStream(t)
	base := startTruncating(t, 0)
	define := func(skus ...string) {
		var defs []map[string]any
		for _, s := range skus {
			defs = append(defs, map[string]any{"sku_id": s, "sale_limit": 1000})
		}
		do(t, http.MethodPut, base+"/admin/campaigns/rl", map[string]any{
			"campaign_id": "rl", "start_at": saleStart.Format(time.RFC3339), "end_at": saleStart.Add(time.Hour).Format(time.RFC3339),
			"payment_window": "15m", "skus": defs,
		}, true)
	}
	define("a.1")
	sink, err := relay.NewNATSSink(nc, "SECKILL_ADDED", "rl")
	if err != nil {
		t.Fatal(err)
	}
	cfg := relay.Config{FeedURL: base, AdminToken: token, CampaignID: "rl", Wait: time.Second, RetryAfter: 10 * time.Millisecond, Logger: quiet}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- relay.Run(ctx, cfg, sink) }()
	waitStored(t, js, "SECKILL_ADDED", map[string]string{"seckill.rl.a%2E1.>": feedEvents(t, base, "a.1")[0].id}, done)
	if stop(); !errors.Is(<-done, context.Canceled) {
		t.Fatal("the relay did not stop on its context")
	}

	define("a.1", "b")
	for i := 0; ; i++ {
		do(t, http.MethodPost, base+"/v1/campaigns/rl/skus/b/reservations", map[string]string{"request_id": fmt.Sprint("r", i), "user_id": fmt.Sprint("u", i)}, false)
		if do(t, http.MethodGet, base+"/admin/campaigns/rl/skus/b/events?limit=1", nil, true)["first_index"].(float64) > 1 {
			break
		}
		if i == 1000 {
			t.Fatal("b's log was not truncated after 1000 sales")
		}
	}

	ctx, stop = context.WithCancel(context.Background())
	defer stop()
	go func() { done <- relay.Run(ctx, cfg, sink) }()
	st, err := js.Stream(context.Background(), "SECKILL_ADDED")
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; {
		if m, err := st.GetLastMsgForSubject(context.Background(), "seckill.rl.b.>"); err == nil {
			t.Fatalf("the relay stored b's event %s (Seckill-Index %s): b's first records are gone", m.Header.Get(jetstream.MsgIDHeader), m.Header.Get(relay.HeaderIndex))
		}
		select {
		case err := <-done:
			t.Logf("%v", err)
			var gap *relay.GapError
			if !errors.As(err, &gap) || gap.SKUID != "b" || gap.FirstIndex <= 1 {
				t.Fatalf("the relay returned %v, want a *GapError of SKU b", err)
			}
			return
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the relay neither stopped nor stored b's events within a minute")
		}
	}
}
