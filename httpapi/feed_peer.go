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
// and a peek consumes nothing in any case.
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
	err = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = (n == 0 && err == nil) || (err != nil && !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EINTR))
		return true // never wait for readability
	})
	return closed || err != nil
}
