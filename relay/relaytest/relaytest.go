// Package relaytest reads back, for tests of the relay and of its
// command, what the relay stored in a JetStream stream.
package relaytest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/relay"
)

// Message is a message of the stream: its event and the SKU its header
// names.
type Message struct {
	client.Event
	SKU string
}

// StreamMessages reads the messages of stream name in order.
func StreamMessages(t testing.TB, js jetstream.JetStream, name string) []Message {
	t.Helper()
	ctx := context.Background()
	st, err := js.Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []Message
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		var e client.Event
		if err := json.Unmarshal(m.Data, &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, Message{Event: e, SKU: m.Header.Get(relay.HeaderSKU)})
	}
	return out
}

// AroundMarker is what a consumer of the stream tells apart after a
// re-anchoring of skuID at fork: the ids of the SKU's messages before its
// last seckill.relay.reanchored marker and past fork (the abandoned
// records'), and of those after it (the followed log's). marker is the
// marker's place in msgs, -1 when the SKU has none.
func AroundMarker(msgs []Message, skuID string, fork uint64) (before, after []string, marker int) {
	marker = -1
	for i, m := range msgs {
		if m.SKU == skuID && m.Type == relay.TypeReanchored {
			marker = i
		}
	}
	if marker < 0 {
		return nil, nil, -1
	}
	for i, m := range msgs {
		switch {
		case m.SKU != skuID || m.Type == relay.TypeReanchored:
		case i < marker && m.SeckillIndex > fork:
			before = append(before, m.ID)
		case i > marker:
			after = append(after, m.ID)
		}
	}
	return before, after, marker
}
