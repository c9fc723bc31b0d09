package orders_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/seckill/seckill/internal/natstest"
	"github.com/seckill/seckill/orders"
)

// A new consumer (no cursor) of a stream whose limits deleted its first
// messages would start at the first one left and never learn the sales
// before it: the source refuses the position, as it does for a saved
// cursor whose next message is gone.
func TestJetStreamSourceRefusesAStreamMissingItsStart(t *testing.T) {
	nc := natstest.Start(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
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
	if events, next, err := src.Next(ctx, ""); err != nil || len(events) != 3 || next != "3" {
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
