//go:build !unix

package httpapi

import "net"

// clientClosed reports false: without a non-blocking peek, a client that
// closed is found by the next write that fails.
func clientClosed(net.Conn) bool { return false }
