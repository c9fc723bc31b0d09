//go:build unix

package httpapi

import (
	"errors"
	"net"
	"syscall"
)

// clientClosed reports whether the client of a stream closed its end of
// conn (or it failed): a peek at the socket that does not wait, one system
// call (recv with MSG_PEEK|MSG_DONTWAIT), finds end of file. The client of
// an SSE stream sends nothing, so "would block" means it is still there,
// and a peek consumes nothing in any case. The peek goes through Control,
// not Read: Read first checks the connection's read deadline, and the one
// fasthttp set for reading the request (Config.ReadTimeout) has passed
// on any stream older than that, so a stream would end at its first
// heartbeat after ReadTimeout though its client is still there.
func clientClosed(conn net.Conn) bool {
	sc, ok := innermost(conn).(syscall.Conn)
	if !ok {
		return false // not a socket (a test's pipe): the write timeout finds it
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	closed := false
	err = raw.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = (n == 0 && err == nil) || (err != nil && !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EINTR))
	})
	return closed || err != nil
}
