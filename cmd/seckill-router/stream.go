package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/seckill/seckill/httpapi"
)

// The event feed's answers may take longer than --timeout: an export is
// written for as long as its reader reads, an SSE stream never ends, and
// a long poll waits up to 60 s for events. The router's forward reads an
// answer whole within --timeout, so it answered each of them 503
// CELL_UNAVAILABLE once --timeout passed (a stream never got its first
// event), and held an export whole in memory before it sent a byte. These
// routes are copied as they come instead: the cell's answer is read as a
// stream, with no deadline on the wait for its next bytes (a cell that
// dies closes the connection; one whose machine is gone is found by TCP
// keepalive), and written to the reader through httpapi.StreamWriter,
// each write getting --timeout, as seckilld writes them: only a reader
// that stops reading is let go.

// streamKeepAlive is the TCP keepalive period of a streamed answer's
// connection to a cell: the only bound on a wait for a cell that is gone
// without closing it.
const streamKeepAlive = 15 * time.Second

// streamCopySize is the most the router reads of a streamed answer before
// it writes it on.
const streamCopySize = 32 << 10

// streamed reports whether a request is one of the feed's streamed
// routes: GET /admin/campaigns/{c}/events, .../skus/{s}/events (a page,
// a long poll or an SSE stream) and .../skus/{s}/reservations (the
// export).
func streamed(method, path string) bool {
	if method != fasthttp.MethodGet {
		return false
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) < 4 || parts[0] != "admin" || parts[1] != "campaigns" {
		return false
	}
	switch len(parts) {
	case 4:
		return parts[3] == "events"
	case 6:
		return parts[3] == "skus" && (parts[5] == "events" || parts[5] == "reservations")
	}
	return false
}

// streamClientAt is the client of streamed answers from the seckilld at
// host:port: its answers' bodies are read as they come, with no read
// timeout.
func (r *router) streamClientAt(addr string) *fasthttp.HostClient {
	if c, ok := r.streams.Load(addr); ok {
		return c.(*fasthttp.HostClient)
	}
	c, _ := r.streams.LoadOrStore(addr, &fasthttp.HostClient{Addr: addr, MaxConns: 4096, WriteTimeout: r.timeout,
		MaxIdemponentCallAttempts: 1, StreamResponseBody: true, Dial: r.streamConns.dial})
	return c.(*fasthttp.HostClient)
}

// errStopping: the router is stopping and opens no stream.
var errStopping = errors.New("the router is stopping")

// streamConns are the connections to cells that carry streamed answers. A
// stream ends only when its cell ends it, so a router that stops closes
// them (endAll): each copy then ends, and closes its reader's connection,
// which the server's shutdown waits for.
type streamConns struct {
	timeout time.Duration
	mu      sync.Mutex
	open    map[*streamConn]struct{}
	ended   bool
}

type streamConn struct {
	net.Conn
	of *streamConns
}

func (c *streamConn) Close() error {
	c.of.mu.Lock()
	delete(c.of.open, c)
	c.of.mu.Unlock()
	return c.Conn.Close()
}

// dial opens a connection to a cell at addr, kept alive by TCP
// keepalive; errStopping once endAll ran.
func (s *streamConns) dial(addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{Timeout: s.timeout, KeepAlive: streamKeepAlive}).Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		conn.Close()
		return nil, errStopping
	}
	c := &streamConn{Conn: conn, of: s}
	s.open[c] = struct{}{}
	return c, nil
}

// endAll closes every connection open and opens no more.
func (s *streamConns) endAll() {
	s.mu.Lock()
	s.ended = true
	open := make([]net.Conn, 0, len(s.open))
	for c := range s.open {
		open = append(open, c.Conn)
	}
	s.mu.Unlock()
	for _, c := range open {
		c.Close()
	}
}

// forwardStream sends a streamed route's request to cell and copies its
// answer to the reader as it comes; it returns false when the cell did
// not answer (answered then as forward answers it).
func (r *router) forwardStream(ctx *fasthttp.RequestCtx, cell string) bool {
	ctx.Response.Reset()
	c := r.client(cell)
	if c == nil {
		unanswered(ctx, cell, errNotDelivered)
		return false
	}
	resp := fasthttp.AcquireResponse()
	if err := r.streamClientAt(c.Addr).Do(&ctx.Request, resp); err != nil {
		fasthttp.ReleaseResponse(resp)
		unanswered(ctx, cell, err)
		return false
	}
	if resp.StatusCode() == fasthttp.StatusMisdirectedRequest {
		// A replica that is no primary (or a cell naming another): the
		// forward's rules (replicas.go, addCellAddress), on a small
		// answer.
		resp.CloseBodyStream()
		fasthttp.ReleaseResponse(resp)
		return r.forward(ctx, cell)
	}
	resp.Header.CopyTo(&ctx.Response.Header)
	body := resp.BodyStream()
	if body == nil || resp.StatusCode() != fasthttp.StatusOK {
		// An error, or a page read whole: a small answer, kept so that
		// the router may replace it (a default cell's 404).
		ctx.Response.SetBody(resp.Body())
		fasthttp.ReleaseResponse(resp)
		return true
	}
	conn, timeout := ctx.Conn(), r.timeout
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		if copyStream(httpapi.StreamWriter(conn, w, timeout), body) {
			// The router's server sets no write deadline of its own: the
			// copy's last one would cut the connection's next answer.
			conn.SetWriteDeadline(time.Time{})
		} else {
			// Cut: the reader must not take a cell's cut answer for a
			// whole one, so its connection is closed, not the chunked
			// body ended; the cell's connection is not used again.
			resp.SetConnectionClose()
			conn.Close()
		}
		resp.CloseBodyStream()
		fasthttp.ReleaseResponse(resp)
	})
	return true
}

// copyStream writes what it reads of body to w as it comes, flushing each
// read; false when body ended with an error or w failed.
func copyStream(w *bufio.Writer, body io.Reader) bool {
	buf := make([]byte, streamCopySize)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil || w.Flush() != nil {
				return false
			}
		}
		if err == io.EOF {
			return true
		}
		if err != nil {
			return false
		}
	}
}
