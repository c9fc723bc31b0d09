package main

import (
	"testing"

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
	port := holdPort(t)
	b := runInBackground(t, "--database", db, "--nats", "nats://"+port.addr(), "--stream", "SECKILL_LATE",
		"--metrics-addr", "127.0.0.1:0", "--wait", "1s")
	b.waitFor(&b.out, serving, "without NATS")
	nc := natstest.StartOn(t, port.release())
	orderstest.Relay(t, nc, c.BaseURL(), "late", "SECKILL_LATE")
	orderstest.WaitClean(t, c, db, "late")
}
