package actors

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

// dispatcherThroughput is how many messages a SKU actor handles before it
// yields its goroutine (protoactor's default is 300). The actor is the one
// serial point of a hot SKU: with thousands of runnable callers, yielding
// often hands its core to them and starves the sequencer.
const dispatcherThroughput = 1 << 16

// pinnedMailbox is a SKU actor's protoactor mailbox (actor.Mailbox), run
// on one long-lived goroutine of its own. It is protoactor's default
// mailbox with a pinned dispatcher folded in: system messages first,
// suspension, one run at a time, a panic escalated to the supervisor, and
// the bound of mailbox.go checked on every post. Folding them saves what
// the default pair costs per burst of messages: a closure allocated for
// each run it schedules, a lock-free ring and a middleware call per
// message (callgrind, one reserve at a time: about 700 of a durable
// reserve's instructions). The goroutine keeps the stack it grew deciding
// calls, and a burst costs a channel hand-off, not a goroutine start and a
// stack copy (BenchmarkReserveDurable, callers=256, GOMAXPROCS 3: 345 k ->
// 430 k reservations/s against protoactor's goroutine per burst). It
// serves a single actor; stop ends its goroutine once the actor has
// stopped. A SKU actor is sent no actor.MessageBatch.
type pinnedMailbox struct {
	bound mailboxBound

	mu        sync.Mutex
	system    []any
	user      []any // user[head:] wait
	head      int
	suspended bool // a SuspendMailbox came and no ResumeMailbox since

	scheduled atomic.Bool // a run is due or under way
	wake      chan struct{}
	stopped   atomic.Bool
	invoker   actor.MessageInvoker
}

func newPinnedMailbox(h *SKU) *pinnedMailbox {
	m := &pinnedMailbox{bound: mailboxBound{h: h}, user: make([]any, 0, 2*mailboxMax), wake: make(chan struct{}, 1)}
	go m.loop()
	return m
}

// loop does the runs, waiting on one channel (a plain receive costs the
// hand-off about half of a two-case select), and ends after the run
// during which stop was called: stop is called from the actor's own
// Stopped message, so within a run.
func (m *pinnedMailbox) loop() {
	for range m.wake {
		m.process()
		if m.stopped.Load() {
			return
		}
	}
}

// PostUserMessage implements actor.Mailbox.
func (m *pinnedMailbox) PostUserMessage(msg any) {
	m.enqueue(msg)
	m.schedule()
}

// enqueue adds a user message to the queue.
func (m *pinnedMailbox) enqueue(msg any) {
	m.bound.MessagePosted(msg)
	m.mu.Lock()
	m.user = append(m.user, msg)
	m.mu.Unlock()
}

// callerRunMax bounds the messages a caller's run (postAndRun) hands the
// actor: its own and a few posted meanwhile. The rest go to the mailbox's
// goroutine, so that a caller answers its own request soon after its
// batch, not after every burst that arrived behind it.
const callerRunMax = 4

// postAndRun posts msg, a user message the caller may run, and when no run
// is due or under way runs the actor on the calling goroutine: the caller
// claims the run as the mailbox's goroutine would (scheduled), so the
// actor still handles one message at a time. It hands the actor messages
// while the next is one a caller may run (SKU.callerRunnable: a drain,
// while the log is idle) and no system message waits, at most
// callerRunMax of them; then it hands the run, if anything waits, to the
// mailbox's goroutine. A system message (start,
// restart, stop: a recovery may take seconds) and the actor's own timers
// and jobs are never run on a caller's goroutine, nor is a suspended
// mailbox. Only a goroutine that holds no lock the actor may take and that
// waits for the actor's answer next posts this way (SKU.do): the log's
// and the executor's goroutines post with PostUserMessage.
//
// A message that finds the run its own and nothing waiting ahead of it
// (the idle actor of an uncontended call) is handed to the actor without
// passing through the queue: as if posted and taken at once, and not
// counted against the bound, which it never waited under.
func (m *pinnedMailbox) postAndRun(msg any) {
	if !m.stopped.Load() && m.scheduled.CompareAndSwap(false, true) {
		if m.stopped.Load() || !m.idleFor(msg) {
			m.scheduled.Store(false) // as if this run were never claimed: the message queues
		} else if !m.invoke(msg, false) {
			m.runCallers(callerRunMax - 1)
			return
		} else {
			m.release()
			return
		}
	}
	m.enqueue(msg)
	if m.stopped.Load() {
		m.schedule()
		return
	}
	if !m.scheduled.CompareAndSwap(false, true) {
		return // a run is due or under way: it takes msg
	}
	if m.stopped.Load() { // stopped in the meantime: a goroutine of its own takes what is left
		go m.process()
		return
	}
	m.runCallers(callerRunMax)
}

// idleFor reports whether, within a run the caller claimed, no message
// waits and msg is one a caller may run (nextCallerRunnable's rule).
func (m *pinnedMailbox) idleFor(msg any) bool {
	m.mu.Lock()
	idle := len(m.system) == 0 && !m.suspended && m.head == len(m.user) && m.bound.h.callerRunnable(msg)
	m.mu.Unlock()
	return idle
}

// runCallers hands the actor, within a run the caller claimed, up to n
// messages a caller may run, then releases the run.
func (m *pinnedMailbox) runCallers(n int) {
	for range n {
		next := m.nextCallerRunnable()
		if next == nil || m.invoke(next, true) {
			break
		}
	}
	m.release()
}

// release ends a caller's run, handing what waits to the mailbox's
// goroutine.
func (m *pinnedMailbox) release() {
	m.scheduled.Store(false)
	if m.waiting() {
		m.schedule()
	}
}

// nextCallerRunnable takes the next message if a caller may run it: a
// callerRunnable user message, with no system message waiting and the
// mailbox not suspended; nil otherwise.
func (m *pinnedMailbox) nextCallerRunnable() any {
	m.mu.Lock()
	if len(m.system) > 0 || m.suspended || m.head == len(m.user) || !m.bound.h.callerRunnable(m.user[m.head]) {
		m.mu.Unlock()
		return nil
	}
	msg := m.user[m.head]
	m.user[m.head] = nil
	if m.head++; m.head == len(m.user) {
		m.user, m.head = m.user[:0], 0
	}
	m.mu.Unlock()
	return msg
}

// invoke hands the actor one user message a caller runs (a drain,
// SKU.callerRunnable), queued (counted against the bound) or not: to the
// actor's incarnation directly once it has started
// (skuActor.callerDrain), else through protoactor. panicked reports a
// panic, escalated to the supervisor (whose messages then wait for the
// mailbox's goroutine).
func (m *pinnedMailbox) invoke(msg any, queued bool) (panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			m.invoker.EscalateFailure(r, msg)
			panicked = true
		}
	}()
	if a := m.bound.h.incarnation.Load(); a != nil {
		a.callerDrain(queued)
	} else {
		if !queued {
			m.bound.MessagePosted(msg) // Receive counts it taken
		}
		m.invoker.InvokeUserMessage(msg)
	}
	return false
}

// PostSystemMessage implements actor.Mailbox.
func (m *pinnedMailbox) PostSystemMessage(msg any) {
	m.mu.Lock()
	m.system = append(m.system, msg)
	m.mu.Unlock()
	m.schedule()
}

// RegisterHandlers implements actor.Mailbox; the dispatcher is unused.
func (m *pinnedMailbox) RegisterHandlers(invoker actor.MessageInvoker, _ actor.Dispatcher) {
	m.invoker = invoker
}

// Start implements actor.Mailbox: the goroutine runs from the start.
func (m *pinnedMailbox) Start() {}

// UserMessageCount implements actor.Mailbox.
func (m *pinnedMailbox) UserMessageCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.user) - m.head
}

// schedule starts a run unless one is due or under way. After stop (the
// actor is gone; only dead letters remain) a run gets a goroutine of its
// own.
func (m *pinnedMailbox) schedule() {
	if !m.scheduled.CompareAndSwap(false, true) {
		return
	}
	if m.stopped.Load() {
		go m.process()
		return
	}
	m.wake <- struct{}{} // never blocks: one run is scheduled at a time, and loop takes it before it runs
}

// process runs until no message waits that may be taken, then marks the
// mailbox unscheduled, and runs again for a message posted meanwhile.
func (m *pinnedMailbox) process() {
	for {
		for m.run() {
		}
		m.scheduled.Store(false)
		if !m.waiting() || !m.scheduled.CompareAndSwap(false, true) {
			return
		}
	}
}

// waiting reports whether a message waits that a run would take.
func (m *pinnedMailbox) waiting() bool {
	m.mu.Lock()
	w := len(m.system) > 0 || !m.suspended && len(m.user) > m.head
	m.mu.Unlock()
	return w
}

// next takes the next message: a system message first; a user message
// unless suspended. nil when none may be taken.
func (m *pinnedMailbox) next() (msg any, system bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.system) > 0 {
		msg = m.system[0]
		m.system[0] = nil
		m.system = m.system[1:]
		return msg, true
	}
	if m.suspended || m.head == len(m.user) {
		return nil, false
	}
	msg = m.user[m.head]
	m.user[m.head] = nil
	if m.head++; m.head == len(m.user) {
		m.user, m.head = m.user[:0], 0
	}
	return msg, false
}

// run hands messages to the actor until none may be taken (false), or
// until one panicked (true, escalated to the supervisor: the caller runs
// again).
func (m *pinnedMailbox) run() (panicked bool) {
	var msg any
	defer func() {
		if r := recover(); r != nil {
			m.invoker.EscalateFailure(r, msg)
			panicked = true
		}
	}()
	for i := 0; ; i++ {
		if i > dispatcherThroughput {
			i = 0
			runtime.Gosched()
		}
		var system bool
		if msg, system = m.next(); msg == nil {
			return false
		}
		if !system {
			m.invoker.InvokeUserMessage(msg)
			continue
		}
		switch msg.(type) {
		case *actor.SuspendMailbox:
			m.setSuspended(true)
		case *actor.ResumeMailbox:
			m.setSuspended(false)
		default:
			m.invoker.InvokeSystemMessage(msg)
		}
	}
}

func (m *pinnedMailbox) setSuspended(s bool) {
	m.mu.Lock()
	m.suspended = s
	m.mu.Unlock()
}

// stop ends the goroutine after the current run. Called from the actor's
// Stopped message, within a run. Idempotent.
func (m *pinnedMailbox) stop() { m.stopped.Store(true) }
