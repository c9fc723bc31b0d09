package httpapi

import (
	"errors"
	"net"
	"syscall"
	"time"
)

// Bounds of the accept back-off.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// sheddingListener keeps accepting through resource exhaustion: when
// accept fails because the process or system is out of file descriptors
// (EMFILE, ENFILE) or buffers, it waits (5 ms doubling to 1 s) and tries
// again instead of returning the error, which would make fasthttp stop
// serving. Connections beyond Server.Concurrency are answered 503 and
// closed by fasthttp, so a flood of idle connections costs a wait, not the
// process.
type sheddingListener struct {
	net.Listener
	onShed func(error) // called once per back-off; may be nil
}

// Accept returns the next connection, or a permanent error.
func (l sheddingListener) Accept() (net.Conn, error) {
	backoff := acceptBackoffMin
	for {
		c, err := l.Listener.Accept()
		if err == nil || !exhausted(err) {
			return c, err
		}
		if l.onShed != nil {
			l.onShed(err)
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, acceptBackoffMax)
	}
}

// exhausted reports whether err is a lack of descriptors or memory that
// goes away when connections close.
func exhausted(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM)
}
