package stream

import (
	"net"
	"sync"
	"testing"
)

// queuedListener hands the primary the connections the test queues, in
// its order, as seckilld's replication address hands them to the primary
// that leads now.
type queuedListener struct {
	net.Listener
	conns chan net.Conn
}

func (l queuedListener) Accept() (net.Conn, error) {
	c, ok := <-l.conns
	if !ok {
		return nil, net.ErrClosed
	}
	return c, nil
}

// Close closes the listener under it: the goroutine queueing its
// connections then ends, and Accept with it.
func (l queuedListener) Close() error { return l.Listener.Close() }

// closeSignal tells when the primary closed the connection.
type closeSignal struct {
	*net.TCPConn
	once   sync.Once
	closed chan struct{}
}

func (c *closeSignal) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.TCPConn.Close()
}

// TestConnectionEndedBeforeTheTakeIsIgnored: a standby's connection that
// waited in the listener's queue while the replica did not lead, its
// hello sent and the connection since closed by the standby (gone to
// another primary, or killed), is not taken as that standby's when this
// primary accepts it: before, it was logged as the standby connected
// with the epoch it had then, and it closed the live connection of the
// same name.
func TestConnectionEndedBeforeTheTakeIsIgnored(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	// b dialed this replica in epoch 1, while it did not lead, and moved on.
	gone, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gone.Write(encodeHello(1, hello{set: "rs", name: "b"})); err != nil {
		t.Fatal(err)
	}
	gone.Close()
	queued, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	stale := &closeSignal{TCPConn: queued.(*net.TCPConn), closed: make(chan struct{})}

	dir := t.TempDir()
	if err := BeginEpoch(dir, 2, quiet); err != nil {
		t.Fatal(err)
	}
	q := queuedListener{Listener: ln, conns: make(chan net.Conn)}
	p, err := NewPrimary(PrimaryConfig{Set: "rs", Name: "a", Epoch: 2, DataDir: dir, Listener: q, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(q.conns)
				return
			}
			q.conns <- c
		}
	}()
	startStandby(t, t.TempDir(), "b", ln.Addr().String())
	conn := func() *primaryConn {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.conns["b"]
	}
	eventually(t, "b connected", func() bool { return conn() != nil })
	live := conn()

	q.conns <- stale
	<-stale.closed
	if c := conn(); c != live {
		t.Fatalf("b's live connection was replaced by one that ended before the primary took it (now %p, was %p)", c, live)
	}
	select {
	case <-live.closed:
		t.Fatal("b's live connection was closed for one that ended before the primary took it")
	default:
	}
}
