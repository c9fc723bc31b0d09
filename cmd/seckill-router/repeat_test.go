package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// cutServer reads each request whole and closes its connection without
// an answer (a primary killed or demoted with the request on the wire);
// it sends each request's path on got.
func cutServer(t *testing.T) (url string, got <-chan string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	paths := make(chan string, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				select {
				case paths <- req.URL.Path:
				default:
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String(), paths
}

// TestRouterRepeatsAReserveCutOff: a reserve naming its request_id whose
// connection to the replica set's primary closed before any answer is sent
// again, with the same body, to the set's next primary within the
// router's timeout (one request_id has one result, so the repeat cannot
// reserve twice). A pay cut off the same way, and a reserve whose repeat
// finds no primary in time, are answered 504 RESULT_UNKNOWN: either may
// have been applied.
func TestRouterRepeatsAReserveCutOff(t *testing.T) {
	cutURL, cut := cutServer(t)
	bodies := make(chan string, 4)
	next := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- string(b)
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"served_by":"next"}`)
	}))
	t.Cleanup(next.Close)
	s := newSetRouter(t, map[string]string{"cut": cutURL, "next": next.URL}, 600*time.Millisecond)
	held := s.acquire("cut")

	// No next primary within the timeout: the reserve may have been applied.
	status, _, body := reserveThrough(t, s.r, "sku-1")
	if status != http.StatusGatewayTimeout || body["error"] != "RESULT_UNKNOWN" {
		t.Fatalf("a reserve cut off with no next primary: %d %v, want 504 RESULT_UNKNOWN", status, body)
	}
	var pay fasthttp.RequestCtx
	pay.Request.Header.SetMethod("POST")
	pay.Request.SetRequestURI("/v1/reservations/demo~sku-1~1~aaaaaaaaaaaaaaaaaaaaaa/pay")
	pay.Request.SetBodyString(`{"payment_id":"p1","amount":100}`)
	s.r.handle(&pay)
	if pay.Response.StatusCode() != http.StatusGatewayTimeout {
		t.Fatalf("a pay cut off: %d %s, want 504 RESULT_UNKNOWN (it is not repeated)", pay.Response.StatusCode(), pay.Response.Body())
	}
	for len(cut) > 0 {
		<-cut
	}

	// A long timeout: the reserve cut off is sent again once the set has
	// its next primary.
	s.r.timeout = 20 * time.Second
	first := s.reserveLater()
	select {
	case <-cut:
	case <-s.ctx.Done():
		t.Fatal("the reserve never reached the primary that cuts it off")
	}
	s.handOver("cut", held, "next")
	s.servedByNext(first, "the reserve cut off, then repeated")
	if b := <-bodies; b != `{"user_id":"u1","request_id":"r1"}` {
		t.Fatalf("the next primary got %q, want the reserve's own body", b)
	}
}
