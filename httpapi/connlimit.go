package httpapi

import (
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// connLimitSlack is how far above MaxConnections fasthttp's own limit
// (Server.Concurrency) is set: a connection counts out of connLimiter when
// fasthttp closes it, a moment before fasthttp frees its worker, and
// fasthttp's own refusal is a plain-text body.
const connLimitSlack = 64

// connLimitWriteTimeout bounds the write of the refusal, done on the
// accept loop: a fresh socket's send buffer takes it at once.
const connLimitWriteTimeout = 100 * time.Millisecond

// connLimiter serves at most max connections at once; one beyond is
// answered 503 with the documented JSON error body and Retry-After, and
// closed (fasthttp's built-in refusal is plain text). onRefuse, if set,
// is called for each.
type connLimiter struct {
	net.Listener
	max      int64
	open     atomic.Int64
	refusal  []byte
	onRefuse func()
}

// newConnLimiter wraps ln with a limit of max connections.
func newConnLimiter(ln net.Listener, max int, onRefuse func()) *connLimiter {
	body := `{"error":"` + ReasonUnavailable + `","detail":"the server's connection limit is reached"}`
	status := StatusOf(ReasonUnavailable)
	refusal := "HTTP/1.1 " + strconv.Itoa(status) + " " + fasthttp.StatusMessage(status) + "\r\nContent-Type: application/json\r\nConnection: close\r\n" +
		"Retry-After: 1\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	return &connLimiter{Listener: ln, max: int64(max), refusal: []byte(refusal), onRefuse: onRefuse}
}

// Accept returns the next connection within the limit, refusing those
// beyond it.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &countedConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		c.SetWriteDeadline(time.Now().Add(connLimitWriteTimeout))
		c.Write(l.refusal) // best effort: the client may be gone
		c.Close()
		if l.onRefuse != nil {
			l.onRefuse()
		}
	}
}

// countedConn counts out of its connLimiter once closed.
type countedConn struct {
	net.Conn
	l    *connLimiter
	once sync.Once
}

// NetConn returns the connection it counts (as tls.Conn.NetConn does).
func (c *countedConn) NetConn() net.Conn { return c.Conn }

// Close closes the connection and frees its place.
func (c *countedConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}
