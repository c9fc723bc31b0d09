package stream

import "sync"

// Bounds of a connection's send queue: a standby that falls this far
// behind is caught up from the primary's disk instead of its memory.
const (
	sendQueueMessages = 1024
	sendQueueBytes    = 32 << 20
)

// sendQueue is one connection's outgoing messages, bounded in count and
// bytes (TigerBeetle: every queue has a bound). tryPush never waits (the
// log's flusher ships through it); push waits for room (the catch-up
// reader). A message larger than the byte bound alone goes into an
// empty queue.
type sendQueue struct {
	mu     sync.Mutex
	cond   sync.Cond
	items  [][]byte
	bytes  int
	closed bool
}

func newSendQueue() *sendQueue {
	q := &sendQueue{}
	q.cond.L = &q.mu
	return q
}

func (q *sendQueue) roomLocked(size int) bool {
	return len(q.items) == 0 || (len(q.items) < sendQueueMessages && q.bytes+size <= sendQueueBytes)
}

// tryPush queues m if there is room; false when full or closed.
func (q *sendQueue) tryPush(m []byte) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || !q.roomLocked(len(m)) {
		return false
	}
	q.addLocked(m)
	return true
}

// push waits for room and queues m; false once closed.
func (q *sendQueue) push(m []byte) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for !q.closed && !q.roomLocked(len(m)) {
		q.cond.Wait()
	}
	if q.closed {
		return false
	}
	q.addLocked(m)
	return true
}

func (q *sendQueue) addLocked(m []byte) {
	q.items = append(q.items, m)
	q.bytes += len(m)
	q.cond.Broadcast()
}

// popAll waits for messages and takes them all (nil once closed).
func (q *sendQueue) popAll(dst [][]byte) [][]byte {
	q.mu.Lock()
	defer q.mu.Unlock()
	for !q.closed && len(q.items) == 0 {
		q.cond.Wait()
	}
	if q.closed {
		return nil
	}
	dst = append(dst[:0], q.items...)
	clear(q.items)
	q.items = q.items[:0]
	q.bytes = 0
	q.cond.Broadcast()
	return dst
}

// close wakes every waiter; nothing more is queued or taken.
func (q *sendQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.items = nil
	q.cond.Broadcast()
}
