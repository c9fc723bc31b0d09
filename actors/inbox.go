package actors

import (
	"sync"
	"sync/atomic"
)

// maxBatch bounds the calls the actor takes per drain message: the longest
// the actor goes without looking at its mailbox (ticks, snapshots) and the
// most replies one log waiter releases.
const maxBatch = 4096

// DefaultInboxMax is Config.InboxMax when zero: four batches wait behind
// the one being decided.
const DefaultInboxMax = 4 * maxBatch

// inbox is a SKU actor's ingress queue, batching on the way in as group
// commit batches on the way out (TigerBeetle's "batching is the normal
// path"): callers append calls under a mutex, and only the first call of a
// burst posts a drain message to the actor's mailbox. The actor takes up to
// maxBatch calls per drain, decides them one at a time in arrival order,
// and registers the whole batch with the log as one waiter. The inbox
// holds at most max calls (Config.InboxMax): post refuses one more with
// ErrBusy at once, so an in-process caller cannot grow it without limit;
// the ingress (package admission) bounds what waits well below that, by
// permits, the age of the oldest waiting call and the log's commit
// latency (Stats). A batch call counts
// as its items everywhere (the bound, the queue figures, the rate, the
// calls per drain): it costs the actor what its items sent one by one
// would. (Calls put back after a panic, requeue, may exceed the bound:
// they were admitted already.)
type inbox struct {
	mu    sync.Mutex
	max   int // Config.InboxMax
	calls []*call
	// items is the items of calls (call.items): what max bounds, and the
	// published queue depth (Stats.Queued). Written only under mu, with
	// calls, so a lock-free reader never sees more than max (but after
	// requeue) nor a call counted that is not in calls.
	items  atomic.Int64
	posted bool // a drain message is in the mailbox and has not taken the last call
	closed bool // the actor stopped: calls are answered ErrClosed at once
}

// drain asks the actor to take the calls waiting in its inbox.
type drain struct{}

// callerRunnable reports whether a caller may run the actor for msg on
// its own goroutine (pinnedMailbox.postAndRun): a drain, which decides and
// appends the calls waiting, while the SKU's log has every record
// appended durable. Then the flusher holds nothing and writes nothing, and
// the drain's records (at most maxBatch items) fit its empty pending batch:
// the caller's run never waits for the disk, so a caller still answers at
// its deadline when the disk hangs (the mailbox's goroutine is the one
// that waits then).
func (h *SKU) callerRunnable(msg any) bool {
	if _, ok := msg.(drain); !ok {
		return false
	}
	l := h.log.Load()
	return l == nil || l.LastIndex() == l.DurableIndex()
}

// post appends c to the inbox of h, stamping it for the sojourn figures,
// and posts a drain message when none is pending. It never blocks: a full
// inbox answers c ErrBusy, a closed one ErrClosed.
func (h *SKU) post(c *call) {
	if h.enqueue(c) {
		h.box.PostUserMessage(drain{})
	}
}

// postAndRun is post for a caller that waits for c's answer next and
// holds no lock: when the actor is idle, the drain runs on the caller's
// goroutine (pinnedMailbox.postAndRun).
func (h *SKU) postAndRun(c *call) {
	if h.enqueue(c) {
		h.box.postAndRun(drain{})
	}
}

// enqueue appends c to the inbox; send reports that no drain message is
// pending: the caller must post one.
func (h *SKU) enqueue(c *call) (send bool) {
	c.enqueuedAt = monoNow()
	n := int64(c.items())
	in := &h.in
	in.mu.Lock()
	if in.closed || in.items.Load()+n > int64(in.max) { // the bound before the count
		err := ErrClosed
		if !in.closed {
			err = ErrBusy
		}
		in.mu.Unlock()
		c.answer(err)
		return false
	}
	in.calls = append(in.calls, c)
	in.items.Add(n)
	send = !in.posted
	in.posted = true
	in.mu.Unlock()
	return send
}

// take moves waiting calls, oldest first, into dst (which it may swap with
// the inbox's own slice, so neither allocates once warm): as many as hold
// up to maxBatch items, and at least one. items is the items taken; more
// reports calls left behind: the taker must post another drain.
func (in *inbox) take(dst []*call) (calls []*call, items int, more bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.items.Load() <= maxBatch {
		calls, in.calls = in.calls, dst[:0]
		items = int(in.items.Swap(0))
		in.posted = false
		return calls, items, false
	}
	n := 0
	for n < len(in.calls) && (n == 0 || items+in.calls[n].items() <= maxBatch) {
		items += in.calls[n].items()
		n++
	}
	calls = append(dst[:0], in.calls[:n]...)
	rest := copy(in.calls, in.calls[n:])
	clear(in.calls[rest:])
	in.calls = in.calls[:rest]
	in.items.Add(-int64(items))
	return calls, items, rest > 0
}

// requeue puts calls back at the front of the inbox, in order. post
// reports that the caller must post a drain message.
func (in *inbox) requeue(calls []*call) (post bool) {
	if len(calls) == 0 {
		return false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.calls = append(append(make([]*call, 0, len(calls)+len(in.calls)), calls...), in.calls...)
	in.items.Add(int64(itemsOf(calls)))
	post = !in.posted
	in.posted = true
	return post
}

// shut closes the inbox for good (the actor is stopping) and answers the
// calls still in it ErrClosed: none waits for an actor that is gone.
func (h *SKU) shut() {
	h.closeOps()
	in := &h.in
	in.mu.Lock()
	calls := in.calls
	in.calls, in.closed = nil, true
	in.items.Store(0)
	in.mu.Unlock()
	for _, c := range calls {
		c.answer(ErrClosed)
	}
}
