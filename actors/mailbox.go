package actors

import (
	"fmt"
	"sync"
	"time"

	"github.com/seckill/seckill/actors/sku"
)

// mailboxMax bounds the messages waiting in a SKU actor's mailbox. Every
// sender is coalesced, so that at most one message of each kind waits:
//
//	drain       one while the inbox holds calls (inbox.posted)
//	tick        one from Engine.Tick (SKU.tickPending)
//	opsPosted   one for every operator's snapshot and audit request (ops.posted)
//	logFailure  one while a log failure is unreported (SKU.failPending)
//	jobDone     one per kind of job: the shell has one job of each kind
//	            out at a time (six kinds, shell.JobKind)
//
// That is ten; mailboxMax leaves room (tests send ticks of their own).
// A message beyond it is a programming error, a sender that is not
// coalesced: MessagePosted panics, naming the bound, rather than let the
// mailbox grow (or block its senders). protoactor's own messages (Close's
// PoisonPill; start, stop and restart go to the system mailbox) are not
// counted.
const mailboxMax = 16

// mailboxBound counts a SKU's messages waiting in its mailbox
// (pinnedMailbox): posted, not yet taken by Receive.
type mailboxBound struct{ h *SKU }

// counted reports whether msg is one of the messages the bound counts.
func counted(msg any) bool {
	switch msg.(type) {
	case drain, tick, opsPosted, logFailure, jobDone:
		return true
	}
	return false
}

// MessagePosted counts a message posted, on the sender's goroutine.
func (b mailboxBound) MessagePosted(msg any) {
	if !counted(msg) {
		return
	}
	if n := b.h.mailbox.Add(1); n > mailboxMax {
		panic(fmt.Sprintf("actors: %s/%s: %d messages wait in the mailbox, more than its bound of %d (%T): a sender is not coalesced",
			b.h.campaignID, b.h.skuID, n, mailboxMax, msg))
	}
}

// ops are the operators' requests to a SKU's shell waiting to be taken
// (snapshots, audits): the first of a burst posts one opsPosted message,
// as the inbox posts one drain for a burst of calls. At most opsMax wait;
// beyond, a request is refused with ErrBusy.
type ops struct {
	mu        sync.Mutex
	snapshots []*snapshotRequest
	audits    []*auditCaller
	posted    bool // an opsPosted message waits for the actor
	closed    bool // the actor stopped
}

// opsMax bounds the operators' requests waiting for one SKU.
const opsMax = 1024

// opsPosted asks the actor to take the operators' requests.
type opsPosted struct{}

// postOp adds a request with add, under the lock, and posts an opsPosted
// message when none waits. ErrBusy when opsMax requests wait, ErrClosed
// once the actor stopped.
func (h *SKU) postOp(waiting func(o *ops) int, add func(o *ops)) error {
	o := &h.ops
	o.mu.Lock()
	switch {
	case o.closed:
		o.mu.Unlock()
		return ErrClosed
	case waiting(o) >= opsMax:
		o.mu.Unlock()
		return ErrBusy
	}
	add(o)
	send := !o.posted
	o.posted = true
	o.mu.Unlock()
	if send {
		h.engine.system.Root.Send(h.pid, opsPosted{})
	}
	return nil
}

// requestSnapshot posts an operator's snapshot request.
func (h *SKU) requestSnapshot(r *snapshotRequest) error {
	return h.postOp(func(o *ops) int { return len(o.snapshots) }, func(o *ops) { o.snapshots = append(o.snapshots, r) })
}

// requestAudit posts an operator's audit request.
func (h *SKU) requestAudit(c *auditCaller) error {
	return h.postOp(func(o *ops) int { return len(o.audits) }, func(o *ops) { o.audits = append(o.audits, c) })
}

// takeOps takes the requests waiting (the actor, on opsPosted).
func (h *SKU) takeOps() (snapshots []*snapshotRequest, audits []*auditCaller) {
	o := &h.ops
	o.mu.Lock()
	defer o.mu.Unlock()
	snapshots, audits = o.snapshots, o.audits
	o.snapshots, o.audits, o.posted = nil, nil, false
	return snapshots, audits
}

// closeOps refuses the requests waiting, and those to come, ErrClosed
// (the actor is stopping).
func (h *SKU) closeOps() {
	o := &h.ops
	o.mu.Lock()
	snapshots, audits := o.snapshots, o.audits
	o.snapshots, o.audits, o.closed = nil, nil, true
	o.mu.Unlock()
	for _, r := range snapshots {
		r.SnapshotDone(SnapshotInfo{}, ErrClosed)
	}
	for _, c := range audits {
		c.Audited(sku.Audit{}, ErrClosed)
	}
}

// logFailed reports a failure of log to the actor, from the goroutine
// that releases the log's waiters (it does not block): one message while the failure
// is unreported, however many batches the failure releases.
func (s *SKU) logFailed(at time.Time) {
	if s.failPending.CompareAndSwap(false, true) {
		s.engine.system.Root.Send(s.pid, logFailure{at: at})
	}
}
