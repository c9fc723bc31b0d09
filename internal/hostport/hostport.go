// Package hostport checks the host:port addresses of seckill's command
// lines before a command binds or contacts anything, so that a mistyped
// one is a usage error (exit 2, naming its flag: docs/operating.md,
// Starting and stopping) and not a failure found after the start: a
// listen that fails with exit 1, or an address published in etcd or
// dialled per request that nothing can reach.
package hostport

import (
	"errors"
	"fmt"
	"net"
)

// Listen checks addr as net.Listen("tcp", addr) reads it before it binds:
// host:port, the host empty for every interface, the port a number from 0
// (a free one) to 65535 or a service name. Whether the host resolves and
// the port is free is for the listen itself to say.
func Listen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port (%s)", addr, reason(err))
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("%q: the port must be a number 0..65535", addr)
	}
	return nil
}

// Dial checks addr as net.Dial("tcp", addr) reads it before it connects:
// host:port, the port a number from 1 to 65535 or a service name (port 0
// reaches nothing). An empty host is this machine, as net.Dial takes it;
// an address published for other machines to dial needs one, which is
// its publisher's rule.
func Dial(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port (%s)", addr, reason(err))
	}
	if n, err := net.LookupPort("tcp", port); err != nil || n == 0 {
		return fmt.Errorf("%q: the port must be a number 1..65535", addr)
	}
	return nil
}

// reason is what net says is wrong with an address, without repeating it.
func reason(err error) string {
	var a *net.AddrError
	if errors.As(err, &a) {
		return a.Err
	}
	return err.Error()
}
