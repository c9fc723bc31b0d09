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
	// commits are the commit indexes to send, one per SKU at most
	// (bounded by the SKUs): each goes after every message queued before
	// it was noted, so a standby hears of a commit index only after the
	// begin of its copy on this connection (noteCommit).
	commits map[skuKey]uint64
	// commitsDue: a commit index noted must go without waiting for a
	// message to carry it.
	commitsDue bool
}

func newSendQueue() *sendQueue {
	q := &sendQueue{commits: make(map[skuKey]uint64)}
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

// noteCommit queues a SKU's commit index, coalesced with one not sent
// yet. It never waits (the primary's commit watcher calls it). now wakes
// the writer for it; otherwise it goes with the next message queued,
// which the caller knows is coming: under load, one write to the socket
// then carries a batch and the commit index of the one before, where
// each took a write (and the standby a read and a wake-up) of its own.
func (q *sendQueue) noteCommit(k skuKey, index uint64, now bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || index <= q.commits[k] {
		return
	}
	q.commits[k] = index
	if now && !q.commitsDue {
		q.commitsDue = true
		q.cond.Broadcast()
	}
}

// popAll waits for messages or commit indexes due and takes them all: the
// messages, then every commit index noted; ok is false once closed.
func (q *sendQueue) popAll(dst [][]byte, commits []ack) (_ [][]byte, _ []ack, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for !q.closed && len(q.items) == 0 && !q.commitsDue {
		q.cond.Wait()
	}
	if q.closed {
		return nil, nil, false
	}
	dst = append(dst[:0], q.items...)
	clear(q.items)
	q.items = q.items[:0]
	q.bytes = 0
	commits = commits[:0]
	for k, i := range q.commits {
		commits = append(commits, ack{key: k, index: i})
	}
	clear(q.commits)
	q.commitsDue = false
	q.cond.Broadcast()
	return dst, commits, true
}

// close wakes every waiter; nothing more is queued or taken.
func (q *sendQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.items = nil
	q.cond.Broadcast()
}
