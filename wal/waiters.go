package wal

// Waiter is told once whether the records it waits for are durable.
// Durable(nil) means every record up to the awaited index is fsynced;
// otherwise err wraps ErrFailed or ErrClosed and nothing about those records
// is promised. It is called from the flusher goroutine, in index order
// (sometimes from the goroutine that calls Await or Close): it must not
// block and must not call the Log's Append, Await or Close.
type Waiter interface{ Durable(err error) }

// WaiterFunc adapts a function to Waiter.
type WaiterFunc func(err error)

// Durable calls f(err).
func (f WaiterFunc) Durable(err error) { f(err) }

// waiter is one registration: release w once index is durable. at is
// when it was registered (Log.stamp), for the figures of Log.Waits.
type waiter struct {
	index uint64
	w     Waiter
	at    int64
}

// waiterQueue is a FIFO ring of waiters whose indexes never decrease. It
// grows by doubling up to max entries and never beyond.
type waiterQueue struct {
	ring  []waiter
	head  int // position of the oldest entry
	count int
	max   int
}

func (q *waiterQueue) empty() bool { return q.count == 0 }

func (q *waiterQueue) full() bool { return q.count >= q.max }

// lastIndex returns the index of the newest entry; the queue is not empty.
func (q *waiterQueue) lastIndex() uint64 {
	return q.ring[(q.head+q.count-1)%len(q.ring)].index
}

// push appends an entry; the queue is not full.
func (q *waiterQueue) push(e waiter) {
	if q.count == len(q.ring) {
		q.grow()
	}
	q.ring[(q.head+q.count)%len(q.ring)] = e
	q.count++
}

func (q *waiterQueue) grow() {
	size := min(max(2*len(q.ring), 64), q.max)
	ring := make([]waiter, size)
	for i := 0; i < q.count; i++ {
		ring[i] = q.ring[(q.head+i)%len(q.ring)]
	}
	q.ring, q.head = ring, 0
}

// popThrough moves, oldest first, every entry with index <= index to dst
// and returns it.
func (q *waiterQueue) popThrough(index uint64, dst []waiter) []waiter {
	for q.count > 0 && q.ring[q.head].index <= index {
		dst = append(dst, q.ring[q.head])
		q.ring[q.head] = waiter{}
		q.head = (q.head + 1) % len(q.ring)
		q.count--
	}
	return dst
}

// popAll moves every entry to dst, oldest first, and returns it.
func (q *waiterQueue) popAll(dst []waiter) []waiter {
	return q.popThrough(^uint64(0), dst)
}
