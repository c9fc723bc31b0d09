package relay_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/natstest"
	"github.com/seckill/seckill/relay"
	"github.com/seckill/seckill/relay/relaytest"
)

// A seckilld started on an older copy of its data dir keeps the log's
// history, and once the copy has recorded past the stream's position the
// feed takes the relay's cursor. The relay, started again, checks the last
// message of each SKU against the feed and stops as on the feed's 409;
// Reanchor stores each SKU's marker at the copy's last record, and the
// relay then relays the copy's records after it, within the stream's
// duplicate window although they re-use the abandoned events' ids: a
// consumer tells the abandoned messages (before the marker, past its fork
// index) from the copy's (after it).
func TestAnOlderCopyThatSoldPastTheStreamIsCaught(t *testing.T) {
	nc, js := natstest.StartJetStream(t)
	sink, err := relay.NewNATSSink(nc, "SECKILL_COPY", "rl")
	if err != nil {
		t.Fatal(err)
	}
	skus := []string{"a.1", "b"}
	relayed := func(base string) {
		t.Helper()
		subjects := map[string]string{}
		for _, s := range skus {
			events := feedEvents(t, base, s)
			subjects["seckill.rl."+strings.ReplaceAll(s, ".", "%2E")+".>"] = events[len(events)-1].id
		}
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- relay.Run(ctx, relayConfig(base), sink) }()
		waitStored(t, js, "SECKILL_COPY", subjects, done)
		if stop(); !errors.Is(<-done, context.Canceled) {
			t.Fatal("the relay did not stop on its context")
		}
	}
	durable := func(base string) map[string]uint64 {
		at := map[string]uint64{}
		for _, s := range skus {
			at[s] = uint64(do(t, http.MethodGet, base+"/admin/campaigns/rl/skus/"+s+"/events?limit=1", nil, true)["durable_index"].(float64))
		}
		return at
	}

	source, older := t.TempDir(), t.TempDir()
	e, base := serveEngine(t, actors.Config{DataDir: source})
	load(t, base, 0, 20)
	relayed(base)
	copied := durable(base)
	e.Close()
	if out, err := exec.Command("cp", "-a", source+"/.", older).CombinedOutput(); err != nil {
		t.Fatalf("copying the data dir: %v\n%s", err, out)
	}
	e, base = serveEngine(t, actors.Config{DataDir: source})
	load(t, base, 20, 40) // records the copy lacks
	relayed(base)
	abandoned := map[string][]string{}
	for _, s := range skus {
		for _, ev := range feedEvents(t, base, s) {
			if ev.index > copied[s] {
				abandoned[s] = append(abandoned[s], ev.id)
			}
		}
	}
	reached := durable(base)
	e.Close()

	_, base = serveEngine(t, actors.Config{DataDir: older})
	for from := 100; ; from += 10 {
		if now := durable(base); now["a.1"] > reached["a.1"] && now["b"] > reached["b"] {
			break
		}
		load(t, base, from, from+10)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	err = relay.Run(ctx, relayConfig(base), sink)
	cancel()
	if !errors.Is(err, client.ErrCursorDiverged) || !strings.Contains(err.Error(), "seckill-relay reanchor") {
		t.Fatalf("the relay on the older copy returned %v, want a 409 naming seckill-relay reanchor", err)
	}
	t.Logf("%v", err)
	done, err := relay.Reanchor(context.Background(), relayConfig(base), sink)
	if err != nil || len(done) != 2 {
		t.Fatalf("Reanchor = %+v, %v; want both SKUs", done, err)
	}
	for _, d := range done {
		if d.ForkIndex != copied[d.SKUID] || d.History == "" || !strings.HasPrefix(d.AbandonedAfter, d.History+"-") {
			t.Fatalf("Reanchor of %s = %+v; want the fork at the copy's last record %d, in the copy's history", d.SKUID, d, copied[d.SKUID])
		}
	}
	relayed(base)
	if again, err := relay.Reanchor(context.Background(), relayConfig(base), sink); err != nil || len(again) != 0 {
		t.Fatalf("Reanchor of a stream that follows the copy = %+v, %v; want nothing", again, err)
	}

	msgs := relaytest.StreamMessages(t, js, "SECKILL_COPY")
	for _, s := range skus {
		before, after, marker := relaytest.AroundMarker(msgs, s, copied[s])
		if marker < 0 {
			t.Fatalf("no marker of %s", s)
		}
		var fromCopy []string
		for _, ev := range feedEvents(t, base, s) {
			if ev.index > copied[s] {
				fromCopy = append(fromCopy, ev.id)
			}
		}
		if fmt.Sprint(before) != fmt.Sprint(abandoned[s]) || len(before) == 0 {
			t.Fatalf("%s's messages before the marker past %d: %v; want the abandoned records' %v", s, copied[s], before, abandoned[s])
		}
		if fmt.Sprint(after) != fmt.Sprint(fromCopy) || len(after) == 0 {
			t.Fatalf("%s's messages after the marker: %v; want the copy's events after %d: %v", s, after, copied[s], fromCopy)
		}
	}
}
