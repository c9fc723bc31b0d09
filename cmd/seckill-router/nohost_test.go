package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/seckill/seckill/httpapi"
)

// TestRequestWithoutHostIsForwarded: an HTTP/1.0 request may come without
// a Host header (RFC 9112 requires one of HTTP/1.1 only). The router
// sends it to its cell and answers the cell's answer; it answered 504
// RESULT_UNKNOWN ("the request may have been applied") for a request it
// never sent, its client refusing to write a request without a Host.
func TestRequestWithoutHostIsForwarded(t *testing.T) {
	got := make(chan string, 1)
	cellLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cell := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		got <- string(ctx.Path())
		ctx.SetContentType("application/json")
		ctx.SetBodyString(`{"status":"paid"}`)
	}}
	go cell.Serve(cellLn)
	t.Cleanup(func() { cell.Shutdown() })
	r, err := newRouter(options{cells: "c1=" + cellLn.Addr().String(), timeout: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := r.server()
	go srv.Serve(httpapi.LingeringListener(ln, srv.ReadTimeout))
	t.Cleanup(func() { srv.Shutdown() })

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A path that names no campaign goes to the default cell, c1.
	if _, err := io.WriteString(conn, "POST /v1/reservations/r-1/pay HTTP/1.0\r\nContent-Length: 0\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != `{"status":"paid"}` {
		t.Fatalf("%d %s, want the cell's 200", resp.StatusCode, body)
	}
	if path := <-got; path != "/v1/reservations/r-1/pay" {
		t.Fatalf("the cell got %q", path)
	}
}
