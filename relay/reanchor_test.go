package relay_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/natstest"
	"github.com/seckill/seckill/internal/testbin"
	"github.com/seckill/seckill/relay"
	"github.com/seckill/seckill/relay/relaytest"
)

// stored is an event of the feed: its id, type, SKU and log index.
type stored struct {
	id, typ, sku string
	index        uint64
}

// feedEvents reads a SKU's whole retained feed.
func feedEvents(t *testing.T, base, skuID string) []stored {
	t.Helper()
	var out []stored
	for cursor := ""; ; {
		page := do(t, http.MethodGet, base+"/admin/campaigns/rl/skus/"+skuID+"/events?limit=1000&after="+cursor, nil, true)
		events, _ := page["events"].([]any)
		if len(events) == 0 {
			return out
		}
		for _, e := range events {
			e := e.(map[string]any)
			out = append(out, stored{id: e["id"].(string), typ: e["type"].(string), sku: skuID, index: uint64(e["seckillindex"].(float64))})
		}
		cursor = page["next_cursor"].(string)
	}
}

// After seckilld was restored to an earlier point, the relay stops on the
// feed's 409. Reanchor stores one seckill.relay.reanchored message for
// the SKU restored; the relay started again goes on with the restored
// log's records after the fork, and a consumer of the stream tells the
// abandoned messages (the SKU's before the marker, past its fork index)
// from the new ones (the SKU's after it).
func TestReanchorAfterARestoreGoesOnWithTheRestoredLog(t *testing.T) {
	seckillctl := testbin.Build(t, "github.com/seckill/seckill/cmd/seckillctl")
	nc, js := natstest.StartJetStream(t)
	sink, err := relay.NewNATSSink(nc, "SECKILL_RESTORED", "rl")
	if err != nil {
		t.Fatal(err)
	}
	// relayed runs the relay until the stream holds the feed's last event
	// of each SKU, then stops it.
	relayed := func(base string) {
		t.Helper()
		want := map[string]string{}
		for _, s := range []string{"a.1", "b"} {
			events := feedEvents(t, base, s)
			want[s] = events[len(events)-1].id
		}
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- relay.Run(ctx, relayConfig(base), sink) }()
		subjects := map[string]string{}
		for s, id := range want {
			subjects["seckill.rl."+strings.ReplaceAll(s, ".", "%2E")+".>"] = id
		}
		waitStored(t, js, "SECKILL_RESTORED", subjects, done)
		if stop(); !errors.Is(<-done, context.Canceled) {
			t.Fatal("the relay did not stop on its context")
		}
	}

	source, restored := t.TempDir(), t.TempDir()
	e, base := serveEngine(t, actors.Config{DataDir: source})
	load(t, base, 0, 20)
	relayed(base)
	fork := uint64(do(t, http.MethodGet, base+"/admin/campaigns/rl/skus/a.1/events?limit=1", nil, true)["durable_index"].(float64))
	load(t, base, 20, 40) // records of a.1 the restore abandons
	relayed(base)
	var abandoned []string
	for _, ev := range feedEvents(t, base, "a.1") {
		if ev.index > fork {
			abandoned = append(abandoned, ev.id)
		}
	}
	e.Close()
	for _, args := range [][]string{
		{"restore", "--from", filepath.Join(source, "rl", "a.1"), "--to", restored, "--until-index", strconv.FormatUint(fork, 10)},
		{"restore", "--from", filepath.Join(source, "rl", "b"), "--to", restored},
	} {
		if out, err := exec.Command(seckillctl, args...).CombinedOutput(); err != nil {
			t.Fatalf("seckillctl %v: %v\n%s", args, err, out)
		}
	}
	_, base = serveEngine(t, actors.Config{DataDir: restored})
	load(t, base, 40, 60) // new sales, re-using the abandoned indexes and reservation ids

	err = relay.Run(context.Background(), relayConfig(base), sink)
	var refused *relay.FeedError
	if !errors.Is(err, client.ErrCursorDiverged) || !strings.Contains(err.Error(), "seckill-relay reanchor") ||
		!errors.As(err, &refused) || refused.Refusal.ForkIndex != fork || refused.Refusal.History == "" {
		t.Fatalf("the relay on the restored seckilld returned %v, want the feed's 409 naming seckill-relay reanchor, the fork index %d and the restored history", err, fork)
	}
	done, err := relay.Reanchor(context.Background(), relayConfig(base), sink)
	if err != nil || len(done) != 1 || done[0].SKUID != "a.1" || done[0].ForkIndex != fork || done[0].History == "" {
		t.Fatalf("Reanchor = %+v, %v; want SKU a.1 at %d", done, err, fork)
	}
	relayed(base)
	if again, err := relay.Reanchor(context.Background(), relayConfig(base), sink); err != nil || len(again) != 0 {
		t.Fatalf("Reanchor of a stream that follows the restored log = %+v, %v; want nothing", again, err)
	}

	// A consumer's view: the SKU's messages before the marker past its
	// fork index are the abandoned records, those after it the restored
	// log's after the fork; the other SKU's are its log, once each.
	msgs := relaytest.StreamMessages(t, js, "SECKILL_RESTORED")
	for i, m := range msgs {
		if m.Type == relay.TypeReanchored && (m.SKU != "a.1" || m.SeckillIndex != fork) {
			t.Fatalf("message %d is %+v: want one marker, of a.1 at %d", i, m, fork)
		}
	}
	before, after, marker := relaytest.AroundMarker(msgs, "a.1", fork)
	if marker < 0 {
		t.Fatal("the stream holds no seckill.relay.reanchored message")
	}
	for _, m := range msgs[:marker] {
		if m.Type == relay.TypeReanchored {
			t.Fatalf("two markers of a.1: %+v and %+v", m, msgs[marker])
		}
	}
	var restoredIDs []string
	for _, ev := range feedEvents(t, base, "a.1") {
		if ev.index > fork {
			restoredIDs = append(restoredIDs, ev.id)
		}
	}
	if fmt.Sprint(before) != fmt.Sprint(abandoned) || len(abandoned) == 0 {
		t.Fatalf("a.1's messages before the marker past %d: %v; want the abandoned records' events %v", fork, before, abandoned)
	}
	if fmt.Sprint(after) != fmt.Sprint(restoredIDs) || len(after) == 0 {
		t.Fatalf("a.1's messages after the marker: %v; want the restored log's events after %d: %v", after, fork, restoredIDs)
	}
	var bStored, bFeed []string
	for _, m := range msgs {
		if m.SKU == "b" {
			bStored = append(bStored, m.ID)
		}
	}
	for _, ev := range feedEvents(t, base, "b") {
		bFeed = append(bFeed, ev.id)
	}
	if fmt.Sprint(bStored) != fmt.Sprint(bFeed) {
		t.Fatalf("b's messages %v, want its feed %v", bStored, bFeed)
	}
}
