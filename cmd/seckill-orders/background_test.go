package main

import (
	"context"
	"net"
	"strings"
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

// freeAddr is a loopback host:port nothing listened on a moment ago.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
