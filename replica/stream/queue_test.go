package stream

import (
	"net"
	"testing"
)

// A live copy whose send queue is full falls back to catching up from
// disk: the flusher's Ship never waits, and the fall is counted.
func TestFullQueueFallsBackToDisk(t *testing.T) {
	n := startPrimary(t, t.TempDir(), 1, nodeOptions{})
	define(t, n.engine, "c1", "s1")
	p := n.primary
	local, remote := net.Pipe()
	defer remote.Close()
	c := &primaryConn{p: p, name: "slow", nc: local, hello: map[skuKey]helloSKU{}, skus: map[skuKey]*connSKU{},
		queue: newSendQueue(), wake: make(chan struct{}, 1), closed: make(chan struct{})}
	for c.queue.tryPush(make([]byte, 1)) {
	}
	k := skuKey{"c1", "s1"}
	p.mu.Lock()
	s := p.skus[k]
	c.skus[k] = &connSKU{mode: modeLive, next: s.shipped + 1}
	p.conns[c.name] = c
	p.mu.Unlock()

	reserve(t, n.engine, "c1", "s1", 0, 1) // commits: "slow" is not waited for
	p.mu.Lock()
	mode := c.skus[k].mode
	delete(p.conns, c.name)
	c.closeLocked()
	p.mu.Unlock()
	if mode != modeCatchUp {
		t.Fatalf("a full queue left the copy %v, want %v", mode, modeCatchUp)
	}
	if got := value(p.metrics.queueFull.WithLabelValues("slow")); got != 1 {
		t.Fatalf("send_queue_full = %v, want 1", got)
	}
	if len(c.queue.items) != 0 {
		t.Fatalf("a closed queue keeps %d messages", len(c.queue.items))
	}
}

// The queue's bounds: a message beyond them is refused by tryPush, and
// one larger than the byte bound goes alone into an empty queue.
func TestSendQueueBounds(t *testing.T) {
	q := newSendQueue()
	for i := 0; i < sendQueueMessages; i++ {
		if !q.tryPush([]byte{1}) {
			t.Fatalf("refused message %d below the bound", i)
		}
	}
	if q.tryPush([]byte{1}) {
		t.Fatal("took a message beyond the count bound")
	}
	if got, commits, _ := q.popAll(nil, nil); len(got) != sendQueueMessages || len(commits) != 0 {
		t.Fatalf("popAll took %d messages, %d commit indexes", len(got), len(commits))
	}
	big := make([]byte, sendQueueBytes+1)
	if !q.tryPush(big) || q.tryPush([]byte{1}) {
		t.Fatal("a message beyond the byte bound must go alone into an empty queue")
	}
	q.close()
	if _, _, ok := q.popAll(nil, nil); q.push([]byte{1}) || ok {
		t.Fatal("a closed queue took or gave a message")
	}
}

// TestSendQueueCoalescesCommits: a SKU's commit indexes noted before a
// pop go as the highest one, after the messages queued with them; a lower
// one than pending changes nothing. One noted to go with the next message
// waits for it; one noted to go now wakes a writer with no message.
func TestSendQueueCoalescesCommits(t *testing.T) {
	q := newSendQueue()
	k := skuKey{"c", "s"}
	q.tryPush([]byte{1})
	q.noteCommit(k, 5, true)
	q.noteCommit(k, 9, false)
	q.noteCommit(k, 7, true)
	msgs, commits, _ := q.popAll(nil, nil)
	if len(msgs) != 1 || len(commits) != 1 || commits[0] != (ack{key: k, index: 9}) {
		t.Fatalf("popAll gave %d messages, commits %v; want 1 and [c/s 9]", len(msgs), commits)
	}
	q.noteCommit(k, 10, false)
	if q.commitsDue {
		t.Fatal("a commit index noted for the next message wakes the writer")
	}
	q.tryPush([]byte{2})
	if msgs, commits, _ = q.popAll(msgs, commits); len(msgs) != 1 || len(commits) != 1 || commits[0].index != 10 {
		t.Fatalf("popAll gave %d messages, commits %v; want 1 and [c/s 10]", len(msgs), commits)
	}
	q.noteCommit(k, 11, true) // wakes a writer waiting with no message queued
	if msgs, commits, _ = q.popAll(msgs, commits); len(msgs) != 0 || len(commits) != 1 || commits[0].index != 11 {
		t.Fatalf("popAll gave %d messages, commits %v; want 0 and [c/s 11]", len(msgs), commits)
	}
}

// An acknowledgement that comes in as soon as catch-up records are
// queued, before catchUp runs again, is taken: the copy's next record
// moved before they went out. Dropped, it would never come again (the
// standby acknowledges an index once), and a SKU with no later record
// would wait for its commit until the standby reconnected.
func TestAckOfCatchUpRecordsAsSoonAsQueued(t *testing.T) {
	n := startPrimary(t, t.TempDir(), 1, nodeOptions{})
	define(t, n.engine, "c1", "s1")
	reserve(t, n.engine, "c1", "s1", 0, 1)
	p := n.primary
	local, remote := net.Pipe()
	defer remote.Close()
	c := &primaryConn{p: p, name: "late", nc: local, hello: map[skuKey]helloSKU{}, skus: map[skuKey]*connSKU{},
		queue: newSendQueue(), wake: make(chan struct{}, 1), closed: make(chan struct{})}
	k := skuKey{"c1", "s1"}
	p.mu.Lock()
	s := p.skus[k]
	last := s.log.DurableIndex()
	cs := &connSKU{mode: modeCatchUp, next: 1}
	c.skus[k] = cs
	p.conns[c.name] = c
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.conns, c.name)
		c.closeLocked()
		p.mu.Unlock()
	}()

	catchUpQueued = func() { // the standby's acknowledgement of everything queued
		p.mu.Lock()
		p.takeAcksLocked(c, []ack{{key: k, index: last}})
		p.mu.Unlock()
	}
	defer func() { catchUpQueued = nil }()
	p.catchUp(c, s, cs)

	p.mu.Lock()
	acked := p.acked[c.name][k]
	p.mu.Unlock()
	if acked != last {
		t.Fatalf("acknowledged through %d, want %d: the acknowledgement of the queued records was dropped", acked, last)
	}
}
