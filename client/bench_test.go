package client_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/seckill/seckill/client"
)

// benchAnswers are the answers the benchmark server gives: a reserve's
// 202, and the SOLD_OUT most attempts of a flash sale get.
var benchAnswers = map[string]struct {
	status int
	body   string
}{
	"202":    {202, `{"reservation_id":"c~s~1~0d869c59db0aae90","request_id":"r-1","state":"PENDING_PAYMENT","token_id":1,"expire_at":"2030-01-01T00:15:00.000Z","status_url":"/v1/reservations/c~s~1~0d869c59db0aae90"}`},
	"409":    {409, `{"error":"SOLD_OUT","detail":"no unit left"}`},
	"status": {200, `{"reservation_id":"c~s~1~0d869c59db0aae90","request_id":"r-1","user_id":"u-1","state":"PAID","token_id":1,"created_at":"2030-01-01T00:00:00.000Z","expire_at":"2030-01-01T00:15:00.000Z","paid_at":"2030-01-01T00:01:00.000Z","payment_id":"p-1"}`},
}

// benchServer serves the answer named by the request's X-Answer header on
// 127.0.0.1 until b ends, and returns its base URL.
func benchServer(b *testing.B, answer string) string {
	a := benchAnswers[answer]
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetStatusCode(a.status)
		ctx.SetContentType("application/json")
		ctx.SetBodyString(a.body)
	}}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Shutdown() })
	return "http://" + ln.Addr().String()
}

// BenchmarkReserve is the client's cost per reserve and per status read
// (ns/op and allocations, 32 workers per core) against an in-process
// fasthttp server giving a fixed answer, over each transport: what a
// load generator built on the client pays per request.
func BenchmarkReserve(b *testing.B) {
	for _, transport := range []string{"net/http", "fasthttp"} {
		for _, answer := range []string{"202", "409", "status"} {
			b.Run("transport="+transport+"/answer="+answer, func(b *testing.B) {
				o := client.Options{BaseURL: benchServer(b, answer), MaxAttempts: 1}
				if transport == "fasthttp" {
					o.FastHTTP = &fasthttp.Client{MaxConnsPerHost: 512}
				}
				c, err := client.New(o)
				if err != nil {
					b.Fatal(err)
				}
				var n atomic.Int64
				b.ReportAllocs()
				b.SetParallelism(32)
				b.RunParallel(func(pb *testing.PB) {
					ctx := context.Background()
					for pb.Next() {
						i := strconv.FormatInt(n.Add(1), 10)
						var err error
						switch answer {
						case "status":
							_, err = c.Reservation(ctx, "c~s~1~0d869c59db0aae90")
						default:
							_, err = c.Reserve(ctx, client.ReserveRequest{CampaignID: "c", SKUID: "s", RequestID: "r-" + i, UserID: "u-" + i})
							if answer == "409" && errors.Is(err, client.ErrSoldOut) {
								err = nil
							}
						}
						if err != nil {
							b.Fatal(err)
						}
					}
				})
			})
		}
	}
}
