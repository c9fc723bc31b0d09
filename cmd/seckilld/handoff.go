package main

import (
	"net"
	"sync"
)

// handoff is one bound listener whose connections go, one server at a
// time, to the server that serves now: a replica's HTTP address stays the
// same while it changes from standby to primary and back, and so does its
// replication address from one tenure as primary to the next. Each server
// gets a fresh handoffListener (Take); closing it, as a server's shutdown
// does, stops only that server's accepts.
type handoff struct {
	ln    net.Listener
	conns chan net.Conn
	done  chan struct{} // closed when ln failed or was closed
	err   error         // ln's error, set before done closes
	once  sync.Once
}

func newHandoff(ln net.Listener) *handoff {
	h := &handoff{ln: ln, conns: make(chan net.Conn), done: make(chan struct{})}
	go h.accept()
	return h
}

func (h *handoff) accept() {
	for {
		c, err := h.ln.Accept()
		if err != nil {
			h.err = err
			close(h.done)
			return
		}
		select {
		case h.conns <- c:
		case <-h.done:
			c.Close()
			return
		}
	}
}

// Addr is the bound address.
func (h *handoff) Addr() net.Addr { return h.ln.Addr() }

// Take returns a listener for the next server.
func (h *handoff) Take() net.Listener {
	return &handoffListener{h: h, closed: make(chan struct{})}
}

// Close closes the bound listener: every taken listener's Accept fails.
func (h *handoff) Close() error {
	var err error
	h.once.Do(func() { err = h.ln.Close() })
	return err
}

type handoffListener struct {
	h      *handoff
	closed chan struct{}
	once   sync.Once
}

func (l *handoffListener) Accept() (net.Conn, error) {
	select {
	case <-l.closed:
		return nil, net.ErrClosed
	default:
	}
	select {
	case c := <-l.h.conns:
		select {
		case <-l.closed: // closed meanwhile: the next server takes it
			go l.giveBack(c)
			return nil, net.ErrClosed
		default:
			return c, nil
		}
	case <-l.closed:
		return nil, net.ErrClosed
	case <-l.h.done:
		return nil, l.h.err
	}
}

// giveBack hands a connection taken after Close to the next server.
func (l *handoffListener) giveBack(c net.Conn) {
	select {
	case l.h.conns <- c:
	case <-l.h.done:
		c.Close()
	}
}

func (l *handoffListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *handoffListener) Addr() net.Addr { return l.h.ln.Addr() }
