package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/seckill/seckill/httpapi"
)

// TestShutdownClosesTheConnectionsItAnswers: a router stopped (SIGTERM,
// as on a restart) with a pay in flight answers it, and the answer says
// "Connection: close": the router closes every connection once it has
// answered on it, and a buyer told so does not send its next command on
// it, where it would meet a closed connection and could not tell whether
// the command was delivered.
func TestShutdownClosesTheConnectionsItAnswers(t *testing.T) {
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	cellLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cell := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		arrived <- struct{}{}
		<-release
		ctx.SetContentType("application/json")
		ctx.SetBodyString(`{"status":"paid"}`)
	}}
	go cell.Serve(cellLn)
	t.Cleanup(func() { cell.Shutdown() })

	o := options{cells: "c1=" + cellLn.Addr().String(), timeout: 5 * time.Second}
	r, err := newRouter(o, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := r.server()
	go srv.Serve(httpapi.LingeringListener(ln, srv.ReadTimeout))

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A path that names no campaign goes to the default cell, c1.
	if _, err := io.WriteString(conn, "POST /v1/reservations/r-1/pay HTTP/1.1\r\nHost: router\r\nContent-Length: 0\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	<-arrived
	stopped := make(chan error, 1)
	go func() { stopped <- srv.ShutdownWithContext(context.Background()) }()
	// The shutdown has begun once the router's listener takes no connection.
	for {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			break
		}
		c.Close()
	}
	close(release)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the pay in flight got no answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != `{"status":"paid"}` {
		t.Fatalf("the pay in flight: %d %s, want the cell's 200", resp.StatusCode, body)
	}
	if !resp.Close {
		t.Fatalf("the answer given while stopping does not say Connection: close (headers %v): the buyer would send its next command on a connection the router closes", resp.Header)
	}
	if n, err := conn.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after its answer the connection read %d bytes, %v; want it closed", n, err)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}
