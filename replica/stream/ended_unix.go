//go:build unix

package stream

import (
	"io"
	"net"
	"syscall"
)

// ended reports why the peer of nc already ended the connection (io.EOF,
// or the reset a read would return now), or nil while it holds it open,
// without waiting or consuming anything: a peek of what the kernel holds.
func ended(nc net.Conn) error {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	var gone error
	var b [1]byte
	rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK || err == syscall.EINTR:
		case err != nil:
			gone = err
		case n == 0:
			gone = io.EOF
		}
		return true
	})
	return gone
}
