package httpapi

import (
	"net"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// lingerMaxBytes bounds what a lingering close reads and drops.
const lingerMaxBytes = 64 << 20

// A request refused before its body was read (413 BODY_TOO_LARGE, 501, a
// malformed request) leaves the rest of the body on its way: closing the
// socket with unread input makes the kernel send a reset instead of a
// FIN, and a client still sending gets "connection reset" before, or
// instead of, reading the answer that is already in its socket. So such a
// connection lingers: once the answer is written, the server shuts its
// sending side (the client reads the answer, then end of file) and reads
// and drops what the client still sends, until the client closes, the
// read timeout (Config.ReadTimeout) or lingerMaxBytes, and only then
// closes. The connection keeps its place under MaxConnections meanwhile.
// net/http does the same for the same reason (closeWriteAndWait); nginx
// calls it lingering_close.

// lingeringListener gives every connection a close that can linger.
type lingeringListener struct {
	net.Listener
	timeout time.Duration
}

// LingeringListener wraps ln so that a connection whose request was
// answered before its body was read (ParseError) lingers, for up to
// timeout, before it closes: the client reads the answer, never a reset.
// Server.Serve uses it; so does seckill-router.
func LingeringListener(ln net.Listener, timeout time.Duration) net.Listener {
	return lingeringListener{Listener: ln, timeout: timeout}
}

// Accept returns the next connection, wrapped.
func (l lingeringListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &lingerConn{Conn: c, timeout: l.timeout}, nil
}

// lingerConn is a connection whose Close lingers once marked.
type lingerConn struct {
	net.Conn
	timeout time.Duration
	linger  atomic.Bool
}

// NetConn returns the connection it wraps (as tls.Conn.NetConn does).
func (c *lingerConn) NetConn() net.Conn { return c.Conn }

// lingerAfterAnswer marks the connection of ctx, whose request was
// answered before its body was read, to linger when fasthttp closes it.
func lingerAfterAnswer(ctx *fasthttp.RequestCtx) {
	if c, ok := ctx.Conn().(*lingerConn); ok {
		c.linger.Store(true)
	}
}

// Close closes the connection, after lingering if it was marked.
func (c *lingerConn) Close() error {
	if c.linger.Swap(false) {
		c.drain()
	}
	return c.Conn.Close()
}

// drain shuts the sending side and reads until end of file, an error,
// the timeout or lingerMaxBytes.
func (c *lingerConn) drain() {
	if cw, ok := innermost(c.Conn).(interface{ CloseWrite() error }); ok {
		if cw.CloseWrite() != nil {
			return // the client is gone
		}
	}
	if c.Conn.SetReadDeadline(time.Now().Add(c.timeout)) != nil {
		return
	}
	var buf [16 << 10]byte
	for read := 0; read < lingerMaxBytes; {
		n, err := c.Conn.Read(buf[:])
		read += n
		if err != nil {
			return
		}
	}
}

// innermost unwraps conn through the NetConn methods of the listeners'
// wrappers down to the socket.
func innermost(conn net.Conn) net.Conn {
	for {
		inner, ok := conn.(interface{ NetConn() net.Conn })
		if !ok {
			return conn
		}
		conn = inner.NetConn()
	}
}
