package stream

import (
	"net"
	"sync"
	"time"
)

// A standby's acknowledgements to its primary, sent as its logs become
// durable.

// acker sends a session's acknowledgements: the newest durable index of
// each SKU, coalesced (one entry per SKU at most pending: bounded by the
// SKUs). The goroutine that notes one writes it, unless another is
// writing, which then writes it too before it returns: no goroutine of
// its own to wake per batch. The log's goroutine that releases its
// waiters thus writes to the socket: a write that blocks (a primary that
// reads nothing) blocks that log's flushes, which wait for the same
// primary anyway, for at most writeTimeout, after which the connection
// is closed.
type acker struct {
	s       *Standby
	nc      net.Conn
	mu      sync.Mutex
	pending map[skuKey]uint64
	list    []ack
	writing bool
	stopped bool
}

func newAcker(s *Standby, nc net.Conn) *acker {
	return &acker{s: s, nc: nc, pending: make(map[skuKey]uint64)}
}

// note acknowledges k up to index. It is called on the goroutine that
// releases a log's waiters and waits for nothing but its own write.
func (a *acker) note(k skuKey, index uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if index > a.pending[k] {
		a.pending[k] = index
	}
	if a.writing {
		return
	}
	a.writing = true
	for len(a.pending) > 0 && !a.stopped {
		a.list = a.list[:0]
		for k, i := range a.pending {
			a.list = append(a.list, ack{key: k, index: i})
		}
		clear(a.pending)
		m := encodeAcks(a.s.epoch.Load(), a.list)
		a.mu.Unlock()
		a.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
		_, err := a.nc.Write(m)
		a.mu.Lock()
		if err != nil {
			a.stopped = true
			a.nc.Close()
		}
	}
	a.writing = false
}

// stop ends the acknowledgements of a session: nothing more is written.
func (a *acker) stop() {
	a.mu.Lock()
	a.stopped = true
	a.mu.Unlock()
	a.nc.Close()
}
