package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/lockedbuf"
	"github.com/seckill/seckill/internal/natstest"
	"github.com/seckill/seckill/orders/orderstest"
)

// seckill-orders started before its NATS server (a deployment starts them
// in any order) waits for it, as it waits for a stream not created yet,
// instead of exiting 1 at its first connection attempt; once NATS and the
// relay run, its orders reconcile clean.
func TestWaitsForNATS(t *testing.T) {
	c := orderstest.Seckill(t)
	db := orderstest.Database(t)
	orderstest.Define(t, c, "late", 30)
	orderstest.Sale(t, c, "late", 0, 10)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx, stop := context.WithCancel(context.Background())
	var out, errOut lockedbuf.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--database", db, "--nats", fmt.Sprintf("nats://127.0.0.1:%d", port), "--stream", "SECKILL_LATE",
			"--metrics-addr", "127.0.0.1:0", "--wait", "1s"}, &out, &errOut)
	}()
	defer func() {
		stop()
		if err := <-done; err != nil && ctx.Err() == nil {
			t.Errorf("seckill-orders: %v", err)
		}
	}()
	for !strings.Contains(out.String(), "seckill-orders metrics on ") { // past its start, consuming
		select {
		case err := <-done:
			done <- err
			t.Fatalf("seckill-orders stopped without NATS: %v\n%s", err, errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	nc := natstest.StartOn(t, port)
	orderstest.Relay(t, nc, c.BaseURL(), "late", "SECKILL_LATE")
	orderstest.WaitClean(t, c, db, "late")
}
