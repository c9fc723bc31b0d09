package actors

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
)

// goroutineID is the id of the calling goroutine, from its stack's first
// line ("goroutine 18 [running]:").
func goroutineID() uint64 {
	var buf [64]byte
	b := bytes.TrimPrefix(buf[:runtime.Stack(buf[:], false)], []byte("goroutine "))
	id, err := strconv.ParseUint(string(b[:bytes.IndexByte(b, ' ')]), 10, 64)
	if err != nil {
		panic(err)
	}
	return id
}

// invocation is one message a recordingInvoker was handed, and on which
// goroutine.
type invocation struct {
	msg       any
	system    bool
	goroutine uint64
}

// recordingInvoker is an actor.MessageInvoker that records what it is
// handed; onUser, when set, runs for each user message (before it is
// recorded as done).
type recordingInvoker struct {
	m         *pinnedMailbox
	mu        sync.Mutex
	got       []invocation
	escalated []any
	onUser    func(msg any)
	changed   chan struct{} // a receive after each invocation or escalation
}

func newRecordingInvoker() *recordingInvoker {
	return &recordingInvoker{changed: make(chan struct{}, 1024)}
}

func (r *recordingInvoker) InvokeSystemMessage(msg any) { r.record(msg, true) }

func (r *recordingInvoker) InvokeUserMessage(msg any) {
	if _, ok := msg.(stopMailbox); ok {
		r.m.stop()
		return
	}
	if r.onUser != nil {
		r.onUser(msg)
	}
	r.record(msg, false)
}

func (r *recordingInvoker) EscalateFailure(reason any, _ any) {
	r.mu.Lock()
	r.escalated = append(r.escalated, reason)
	r.mu.Unlock()
	r.changed <- struct{}{}
}

func (r *recordingInvoker) record(msg any, system bool) {
	r.mu.Lock()
	r.got = append(r.got, invocation{msg: msg, system: system, goroutine: goroutineID()})
	r.mu.Unlock()
	r.changed <- struct{}{}
}

// waitFor waits until n messages were invoked and returns them.
func (r *recordingInvoker) waitFor(t *testing.T, n int) []invocation {
	t.Helper()
	for {
		r.mu.Lock()
		got := append([]invocation(nil), r.got...)
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		<-r.changed
	}
}

// stopMailbox makes a recordingInvoker stop its mailbox, as the actor's
// Stopped message does.
type stopMailbox struct{}

// testMailbox is a pinned mailbox of a bare SKU handle, whose goroutine
// ends with the test.
func testMailbox(t *testing.T, inv *recordingInvoker) *pinnedMailbox {
	m := newPinnedMailbox(&SKU{campaignID: "c", skuID: "s"})
	m.RegisterHandlers(inv, nil)
	inv.m = m
	t.Cleanup(func() { m.PostUserMessage(stopMailbox{}) })
	return m
}

// A drain posted to an idle mailbox by its caller runs on the caller's
// goroutine before postAndRun returns: no hand-off to the mailbox's
// goroutine.
func TestCallerRunsTheIdleActor(t *testing.T) {
	inv := newRecordingInvoker()
	m := testMailbox(t, inv)
	me := goroutineID()
	m.postAndRun(drain{})
	inv.mu.Lock()
	got := append([]invocation(nil), inv.got...)
	inv.mu.Unlock()
	if len(got) != 1 || got[0].goroutine != me {
		t.Fatalf("after postAndRun: %+v, want the drain invoked on the caller's goroutine %d", got, me)
	}
}

// A caller's run hands the actor at most callerRunMax messages; those
// posted meanwhile beyond it go to the mailbox's goroutine, in order.
func TestCallerRunIsBounded(t *testing.T) {
	inv := newRecordingInvoker()
	m := testMailbox(t, inv)
	const more = 2 * callerRunMax
	first := true
	inv.onUser = func(any) {
		if first { // on the caller's run: a burst arrives behind it
			first = false
			for range more {
				m.PostUserMessage(drain{})
			}
		}
	}
	me := goroutineID()
	m.postAndRun(drain{})
	got := inv.waitFor(t, 1+more)
	onCaller := 0
	for i, g := range got {
		if g.goroutine == me {
			if i != onCaller {
				t.Fatalf("message %d ran on the caller after one ran elsewhere: %+v", i, got)
			}
			onCaller++
		}
	}
	if onCaller != callerRunMax {
		t.Fatalf("%d messages ran on the caller's goroutine, want %d", onCaller, callerRunMax)
	}
}

// A caller never runs the actor while a system message waits or while the
// mailbox is suspended: the mailbox's goroutine does, system messages
// first.
func TestCallerDoesNotRunPastSystemMessages(t *testing.T) {
	inv := newRecordingInvoker()
	m := testMailbox(t, inv)
	me := goroutineID()
	m.PostSystemMessage(&actor.SuspendMailbox{})
	m.postAndRun(drain{}) // suspended (or the suspension waits): not run here
	m.PostSystemMessage(&actor.ResumeMailbox{})
	got := inv.waitFor(t, 1)
	if len(got) != 1 || got[0].goroutine == me || got[0].system {
		t.Fatalf("%+v, want the drain invoked once, off the caller's goroutine", got)
	}
	// A system message posted and not yet scheduled (its poster is about
	// to schedule it) when the caller finds the mailbox idle.
	stop := &actor.Stop{}
	m.mu.Lock()
	m.system = append(m.system, stop)
	m.mu.Unlock()
	m.postAndRun(drain{})
	got = inv.waitFor(t, 3)
	if got[1].msg != stop || got[1].goroutine == me || got[2].goroutine == me {
		t.Fatalf("%+v, want the system message first, then the drain, neither on the caller's goroutine", got)
	}
}

// A panic in a caller's run is escalated to the supervisor, and the
// messages behind it are still handled.
func TestCallerRunEscalatesPanics(t *testing.T) {
	inv := newRecordingInvoker()
	m := testMailbox(t, inv)
	panicked := false
	inv.onUser = func(any) {
		if !panicked {
			panicked = true
			m.PostUserMessage(drain{})
			panic("boom")
		}
	}
	m.postAndRun(drain{})
	got := inv.waitFor(t, 1)
	inv.mu.Lock()
	escalated := append([]any(nil), inv.escalated...)
	inv.mu.Unlock()
	if len(escalated) != 1 || escalated[0] != "boom" || len(got) != 1 {
		t.Fatalf("escalated %v, invoked %+v: want the panic escalated and the next drain handled", escalated, got)
	}
}
