package bench

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/seckill/seckill/client"
)

// BenchmarkReserveClient is the load tool's cost per reserve: its
// SKUReserver (package client over fasthttp, one attempt: the tool keeps
// its own resend policy) beside package client over net/http, both
// against the same in-process fasthttp server answering a fixed 202
// (ns/op and allocations, 64 workers).
func BenchmarkReserveClient(b *testing.B) {
	const answer = `{"reservation_id":"c~s~1~0d869c59db0aae90","request_id":"r-1","state":"PENDING_PAYMENT","token_id":1,"expire_at":"2030-01-01T00:15:00.000Z","status_url":"/v1/reservations/c~s~1~0d869c59db0aae90"}`
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetStatusCode(fasthttp.StatusAccepted)
		ctx.SetContentType("application/json")
		ctx.SetBodyString(answer)
	}}
	go srv.Serve(ln)
	defer srv.Shutdown()
	base := "http://" + ln.Addr().String()
	var n atomic.Int64
	b.Run("load-tool", func(b *testing.B) {
		c, err := NewClient(ClientOptions{Target: base, MaxConns: 80})
		if err != nil {
			b.Fatal(err)
		}
		r := c.SKU("c", "s")
		b.ReportAllocs()
		b.SetParallelism(32)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := n.Add(1)
				if reply, err := r.Reserve(context.Background(), fmt.Sprint("r-", i), fmt.Sprint("u-", i)); err != nil || reply.Outcome != OutcomeAccepted {
					b.Fatal(reply, err)
				}
			}
		})
	})
	b.Run("client=net/http", func(b *testing.B) {
		c, err := client.New(client.Options{BaseURL: base, MaxAttempts: 1})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.SetParallelism(32)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := n.Add(1)
				if _, err := c.Reserve(context.Background(), client.ReserveRequest{CampaignID: "c", SKUID: "s",
					RequestID: fmt.Sprint("r-", i), UserID: fmt.Sprint("u-", i)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}
