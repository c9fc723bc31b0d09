package main

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/cells"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/cmd/seckilld/seckilldtest"
	"github.com/seckill/seckill/internal/etcdtest"
	"github.com/seckill/seckill/internal/natstest"
	"github.com/seckill/seckill/ledger"
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
	etcd := etcdtest.Start(t)
	seckilld := seckilldtest.Build(t, false)
	cellURLs := map[string]string{}
	for _, cell := range []string{"c1", "c2"} {
		cellURLs[cell] = seckilldtest.Start(t, seckilld, t.TempDir(), nil, "--cell", cell, "--etcd", etcd.Endpoint, "--admin-token", orderstest.Token).Base
	}
	ec, err := ledger.Dial([]string{etcd.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	l := ledger.New(ec, ledger.DefaultPrefix)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	m, err := cells.EvenMap(1, []string{"c1", "c2"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, s := range orderstest.SKUs {
		d := sku.Definition{CampaignID: "cc", SKUID: s, StartAt: now.Add(-time.Minute).UnixMilli(), EndAt: now.Add(time.Hour).UnixMilli(),
			PaymentWindowMs: 900_000, SaleLimit: 80, ReleaseOnClose: true}
		if _, err := cells.Publish(ctx, l, d, m, 5, []ledger.InitialGrant{{Cell: "c1", Units: 40}, {Cell: "c2", Units: 40}}); err != nil {
			t.Fatal(err)
		}
	}
	for cell, url := range cellURLs { // each cell takes the published SKUs within a second
		cc, _ := client.New(client.Options{BaseURL: url, AdminToken: orderstest.Token})
		for _, s := range orderstest.SKUs {
			for _, err := cc.Audit(ctx, "cc", s); err != nil; _, err = cc.Audit(ctx, "cc", s) {
				if ctx.Err() != nil {
					t.Fatalf("cell %s never defined %s: %v", cell, s, err)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}

	db := orderstest.Database(t)
	nc := natstest.Start(t)
	octx, stop := context.WithCancel(context.Background())
	exited := make(chan error, 1)
	go func() {
		exited <- run(octx, []string{"--database", db, "--etcd", etcd.Endpoint, "--nats", nc.ConnectedUrl(), "--stream", "SECKILL_CC",
			"--campaign", "cc", "--metrics-addr", "", "--wait", "1s", "--log-level", "error"}, io.Discard, io.Discard)
	}()
	t.Cleanup(func() {
		if stop(); !t.Failed() {
			if err := <-exited; err != nil {
				t.Errorf("seckill-orders stopped with %v, want nil on a stop", err)
			}
		}
	})
	for cell, url := range cellURLs {
		orderstest.RelayCell(t, nc, url, "cc", "SECKILL_CC", cell)
	}
	c, err := client.New(client.Options{BaseURL: cellURLs["c1"], AdminToken: orderstest.Token, Cells: cellURLs})
	if err != nil {
		t.Fatal(err)
	}
	orderstest.Sale(t, c, "cc", 0, 60)

	clientOf := func(base string) (*client.Client, error) {
		return client.New(client.Options{BaseURL: base, AdminToken: orderstest.Token})
	}
	for {
		reservations, skus, _, err := reconcile.FromCells(ctx, l, clientOf, orderstest.Token, "cc", "")
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
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var consumers []string
	if err := conn.QueryRow(ctx, `SELECT array_agg(consumer ORDER BY consumer) FROM order_cursors`).Scan(&consumers); err != nil ||
		strings.Join(consumers, ",") != "jetstream:SECKILL_CC_c1,jetstream:SECKILL_CC_c2" {
		t.Fatalf("consumers %v (%v), want one per cell's stream", consumers, err)
	}
}
