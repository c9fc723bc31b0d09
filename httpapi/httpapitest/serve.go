// Package httpapitest runs seckill's HTTP service in a test process: one
// helper for the packages (cells, relay, ...) whose tests need a real
// server on loopback in front of an engine they opened.
package httpapitest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/seckill/seckill/httpapi"
)

// Serve starts the HTTP service of cfg on 127.0.0.1 (a free port) and
// returns its base URL ("http://127.0.0.1:PORT"). The server shuts down
// (10 s for requests in flight) when the test ends, before the cleanups
// registered earlier, so a caller that registers its engine's Close before
// calling Serve closes the engine after the server. A configuration the
// service refuses, or no free port, fails the test.
func Serve(t testing.TB, cfg httpapi.Config) string {
	t.Helper()
	srv, err := httpapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return "http://" + ln.Addr().String()
}
