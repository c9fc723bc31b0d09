package main

import (
	"context"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/lockedbuf"
)

// background is seckill-orders run in the test's process until the test
// ends (then stopped, its error reported unless the stop caused it).
type background struct {
	t           *testing.T
	out, errOut lockedbuf.Buffer
	done        chan error
}

func runInBackground(t *testing.T, args ...string) *background {
	ctx, stop := context.WithCancel(context.Background())
	b := &background{t: t, done: make(chan error, 1)}
	go func() { b.done <- run(ctx, args, &b.out, &b.errOut) }()
	t.Cleanup(func() {
		stop()
		if err := <-b.done; err != nil && ctx.Err() == nil {
			t.Errorf("seckill-orders: %v", err)
		}
	})
	return b
}

// waitFor waits until buf (b.out or b.errOut) holds marker; seckill-orders
// stopping first fails the test, naming what it was waiting in.
func (b *background) waitFor(buf *lockedbuf.Buffer, marker, what string) {
	b.t.Helper()
	for !strings.Contains(buf.String(), marker) {
		select {
		case err := <-b.done:
			b.done <- err
			b.t.Fatalf("seckill-orders stopped %s: %v\n%s", what, err, b.errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// serving is the line seckill-orders prints once past its start, consuming.
const serving = "seckill-orders metrics on "

// latePort holds a loopback port for a server that comes up later, as
// the order service is told its address before it is up: until then
// each connection is closed at once, as a server that is not up refuses
// it, and no other process (a parallel test's) can take the port, as
// it could one merely picked free.
type latePort struct {
	ln net.Listener
	to atomic.Pointer[string] // where connections go once up; nil: down
}

func holdPort(t *testing.T) *latePort {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &latePort{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if to := p.to.Load(); to != nil {
				go forward(c, *to)
			} else {
				c.Close()
			}
		}
	}()
	return p
}

// addr is the port's host:port.
func (p *latePort) addr() string { return p.ln.Addr().String() }

// forwardTo brings the server up at the port: connections from now on go
// to target.
func (p *latePort) forwardTo(target string) { p.to.Store(&target) }

// release gives the port up for a server that binds it itself (a moment
// in which another process could take it, where picking it free left
// the whole wait) and returns its number.
func (p *latePort) release() int {
	p.ln.Close()
	return p.ln.Addr().(*net.TCPAddr).Port
}

// forward copies c to and from a connection to target.
func forward(c net.Conn, target string) {
	defer c.Close()
	d, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer d.Close()
	go io.Copy(d, c)
	io.Copy(c, d)
}
