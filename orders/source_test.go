package orders_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/internal/natstest"
	"github.com/seckill/seckill/orders"
	"github.com/seckill/seckill/relay"
)

// A new consumer (no cursor) of a stream whose limits deleted its first
// messages would start at the first one left and never learn the sales
// before it: the source refuses the position, as it does for a saved
// cursor whose next message is gone.
func TestJetStreamSourceRefusesAStreamMissingItsStart(t *testing.T) {
	nc, js := natstest.StartJetStream(t)
	ctx := context.Background()
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "CUT", Subjects: []string{"cut.>"}})
	if err != nil {
		t.Fatal(err)
	}
	empty := &orders.JetStreamSource{Conn: nc, Stream: "CUT", Limit: 10, Wait: 100 * time.Millisecond}
	defer empty.Close()
	if events, next, err := empty.Next(ctx, ""); err != nil || len(events) != 0 || next != "" {
		t.Fatalf("a stream with no message yet: %d events, next %q, %v", len(events), next, err)
	}
	event := []byte(`{"specversion":"1.0","id":"0123456789abcdef-1","source":"/seckill/c/s","type":"seckill.sku.defined","seckillindex":1}`)
	for range 3 {
		if _, err := js.Publish(ctx, "cut.events", event); err != nil {
			t.Fatal(err)
		}
	}
	src := &orders.JetStreamSource{Conn: nc, Stream: "CUT", Limit: 10, Wait: 100 * time.Millisecond}
	defer src.Close()
	if events, next, err := src.Next(ctx, ""); err != nil || len(events) != 3 || !strings.HasPrefix(next, "3@") {
		t.Fatalf("a whole stream: %d events, next %q, %v", len(events), next, err)
	}
	if err := stream.Purge(ctx, jetstream.WithPurgeSequence(3)); err != nil { // messages 1 and 2 deleted
		t.Fatal(err)
	}
	fresh := &orders.JetStreamSource{Conn: nc, Stream: "CUT", Limit: 10, Wait: 100 * time.Millisecond}
	defer fresh.Close()
	events, _, err := fresh.Next(ctx, "")
	t.Logf("%v", err)
	if !errors.Is(err, orders.ErrPosition) || len(events) != 0 {
		t.Fatalf("a new consumer of a stream that lost its first messages: %d events, %v; want ErrPosition", len(events), err)
	}
	if _, _, err := fresh.Next(ctx, "1"); !errors.Is(err, orders.ErrPosition) {
		t.Fatalf("a cursor whose next message is gone: %v", err)
	}
}

// A stream deleted and created again under its name numbers other
// messages from 1: a consumer's cursor into the old one is refused
// (ErrPosition), instead of going on at its sequence in the new one and
// skipping the messages before it. A bare sequence (a cursor saved
// without the stream's creation) is still read as of the stream there is.
func TestJetStreamSourceRefusesARecreatedStream(t *testing.T) {
	nc, js := natstest.StartJetStream(t)
	ctx := context.Background()
	fill := func(n int) {
		t.Helper()
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "AGAIN", Subjects: []string{"again.>"}}); err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= n; i++ {
			event := fmt.Sprintf(`{"specversion":"1.0","id":"0123456789abcdef-%d","source":"/seckill/c/s","type":"seckill.sku.defined","seckillindex":%d}`, i, i)
			if _, err := js.Publish(ctx, "again.events", []byte(event)); err != nil {
				t.Fatal(err)
			}
		}
	}
	fill(3)
	src := &orders.JetStreamSource{Conn: nc, Stream: "AGAIN", Limit: 2, Wait: 100 * time.Millisecond}
	defer src.Close()
	_, cursor, err := src.Next(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	src.Close()
	if err := js.DeleteStream(ctx, "AGAIN"); err != nil {
		t.Fatal(err)
	}
	fill(5)
	events, _, err := src.Next(ctx, cursor)
	t.Logf("%v", err)
	if !errors.Is(err, orders.ErrPosition) || len(events) != 0 || !strings.Contains(err.Error(), "order_cursors") {
		t.Fatalf("cursor %s of the deleted stream read %d events of the new one, %v; want ErrPosition", cursor, len(events), err)
	}
	fresh := &orders.JetStreamSource{Conn: nc, Stream: "AGAIN", Limit: 10, Wait: 100 * time.Millisecond}
	defer fresh.Close()
	if events, next, err := fresh.Next(ctx, "2"); err != nil || len(events) != 3 || events[0].SeckillIndex != 3 || !strings.HasPrefix(next, "5@") {
		t.Fatalf("a bare sequence: %d events, next %q, %v", len(events), next, err)
	}
	for _, bad := range []string{"x", "2@", "2@x", "2@0", "@5"} {
		if _, _, err := fresh.Next(ctx, bad); !errors.Is(err, orders.ErrPosition) {
			t.Fatalf("cursor %q: %v", bad, err)
		}
	}
}

// A consumer re-anchored with a floor skips the messages of its history
// up to it and applies those after; a relay's re-anchoring message right
// after skipped messages is met with the cursor moved past them (so that
// Reanchor finds it next), then stops the consumer with a *Diverged.
func TestJetStreamSourceSkipsUpToItsFloorsAndStopsAtAMarker(t *testing.T) {
	nc, js := natstest.StartJetStream(t)
	ctx := context.Background()
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "FLOORS", Subjects: []string{"floors.>"}})
	if err != nil {
		t.Fatal(err)
	}
	event := func(id, typ string) {
		t.Helper()
		body := fmt.Sprintf(`{"specversion":"1.0","id":%q,"source":"/seckill/c/s","type":%q,"seckillindex":1,"data":{"campaign_id":"c","sku_id":"y","fork_index":2}}`, id, typ)
		if _, err := js.Publish(ctx, "floors.s", []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	event("00000000000000a1-5", "seckill.sku.paused")
	event("00000000000000a1-6", "seckill.sku.resumed")
	event("00000000000000a1-7", "seckill.sku.paused")
	event("00000000000000b2-3", "seckill.sku.paused") // another history: no floor
	event("00000000000000a1-8", "seckill.sku.resumed")
	event("reanchor-00000000000000b2-3", relay.TypeReanchored)
	created := stream.CachedInfo().Created.UnixNano()
	src := &orders.JetStreamSource{Conn: nc, Stream: "FLOORS", Limit: 10, Wait: 100 * time.Millisecond}
	defer src.Close()
	floor := feed.CampaignCursor(map[string]string{"00000000000000a1": "00000000000000a1-6"})

	events, next, err := src.Next(ctx, fmt.Sprintf("0@%d~%s", created, floor))
	var ids []string
	for _, e := range events {
		ids = append(ids, e.ID)
	}
	if err != nil || fmt.Sprint(ids) != "[00000000000000a1-7 00000000000000b2-3 00000000000000a1-8]" || next != fmt.Sprintf("5@%d", created) {
		t.Fatalf("Next after the floor a1-6 = %v, %q, %v; want a1-7, b2-3, a1-8 and the cursor 5 without the floor passed", ids, next, err)
	}
	var d *orders.Diverged
	if _, _, err := src.Next(ctx, next); !errors.As(err, &d) || d.SKUID != "y" || d.Seq != 6 || d.Stream != "FLOORS" || !errors.Is(err, orders.ErrPosition) {
		t.Fatalf("Next at the re-anchoring message = %v, want a *Diverged of SKU y at message 6", err)
	}

	// Skipped messages, then the marker: the cursor moves past them first.
	events, next, err = src.Next(ctx, fmt.Sprintf("3@%d~%s", created, feed.CampaignCursor(map[string]string{"00000000000000b2": "00000000000000b2-3", "00000000000000a1": "00000000000000a1-9"})))
	if err != nil || len(events) != 0 || !strings.HasPrefix(next, fmt.Sprintf("5@%d~", created)) {
		t.Fatalf("Next over skipped messages up to the marker = %d events, %q, %v; want none and the cursor 5", len(events), next, err)
	}
	if _, _, err := src.Next(ctx, next); !errors.As(err, &d) {
		t.Fatalf("Next at the re-anchoring message = %v, want a *Diverged", err)
	}
}
