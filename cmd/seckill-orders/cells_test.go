package main

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/cmd/seckilld/seckilldtest"
	"github.com/seckill/seckill/internal/natstest"
	"github.com/seckill/seckill/orders/orderstest"
	"github.com/seckill/seckill/reconcile"
)

// A campaign sold by two cells (a real etcd, two seckilld processes run
// as cells c1 and c2, both SKUs published over them), each cell's feed
// relayed by a relay of its own (--cell) into a stream of its own:
// seckill-orders --etcd --nats, started before the relays made their
// streams, waits for them, consumes each cell's stream with a cursor of
// its own, and the orders reconcile clean with the cluster. The streams
// hold their cell's subjects only, and no event id is in both.
func TestCellsFromJetStream(t *testing.T) {
	cl := orderstest.StartCells(t, seckilldtest.Build(t, false), "cc")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	db := orderstest.Database(t)
	nc := natstest.Start(t)
	octx, stop := context.WithCancel(context.Background())
	exited := make(chan error, 1)
	go func() {
		exited <- run(octx, []string{"--database", db, "--etcd", cl.Etcd.Endpoint, "--nats", nc.ConnectedUrl(), "--stream", "SECKILL_CC",
			"--campaign", "cc", "--metrics-addr", "", "--wait", "1s", "--log-level", "error"}, io.Discard, io.Discard)
	}()
	t.Cleanup(func() {
		if stop(); !t.Failed() {
			if err := <-exited; err != nil {
				t.Errorf("seckill-orders stopped with %v, want nil on a stop", err)
			}
		}
	})
	for cell, url := range cl.URLs {
		orderstest.RelayCell(t, nc, url, "cc", "SECKILL_CC", cell)
	}
	orderstest.Sale(t, cl.Client(t), "cc", 0, 60)

	clientOf := func(base string) (*client.Client, error) {
		return client.New(client.Options{BaseURL: base, AdminToken: orderstest.Token})
	}
	for {
		reservations, skus, _, err := reconcile.FromCells(ctx, cl.Ledger, clientOf, orderstest.Token, "cc", "")
		if err != nil {
			t.Fatal(err)
		}
		byID, err := reconcile.LoadOrders(ctx, db, "cc", "") // an error until seckill-orders has migrated the schema
		r := reconcile.Compare("cc", "", reservations, skus, byID, 0, time.Now())
		if err == nil && r.Clean && r.Compared > 0 {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("seckill-orders ended: %v", err)
		case <-ctx.Done():
			t.Fatalf("the orders never reconciled clean: %v; %d differences, %+v", err, len(r.Differences), r.Differences)
		case <-time.After(50 * time.Millisecond):
		}
	}

	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{} // event id: its stream
	for _, cell := range []string{"c1", "c2"} {
		name := "SECKILL_CC_" + cell
		st, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		info := st.CachedInfo()
		if want := "seckill.cc.@" + cell + ".>"; !slices.Equal(info.Config.Subjects, []string{want}) || info.State.Msgs == 0 {
			t.Fatalf("stream %s: subjects %v, %d messages; want %s and some", name, info.Config.Subjects, info.State.Msgs, want)
		}
		for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
			msg, err := st.GetMsg(ctx, seq)
			if err != nil {
				t.Fatal(err)
			}
			id := msg.Header.Get(jetstream.MsgIDHeader)
			if other, dup := seen[id]; dup || !strings.HasPrefix(msg.Subject, "seckill.cc.@"+cell+".") {
				t.Fatalf("stream %s message %d: id %s (also in %q), subject %s", name, seq, id, other, msg.Subject)
			}
			seen[id] = name
		}
	}
	if consumers := orderstest.Consumers(t, db); consumers != "jetstream:SECKILL_CC_c1,jetstream:SECKILL_CC_c2" {
		t.Fatalf("consumers %s, want one per cell's stream", consumers)
	}
}
