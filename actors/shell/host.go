package shell

import (
	"time"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/purchase"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/recovery"
	"github.com/seckill/seckill/wal"
)

// Host is what runs a Shell: the protoactor actor in package actors, the
// simulator in package sim. The shell tells it what its callers and
// readers must learn; it never calls the Shell back from these methods
// (an input that follows, such as LogFailed, is brought back later, on the
// shell's goroutine). Each method says on which goroutine it runs: the
// shell's (the one that calls the Shell's inputs), or the one that
// releases the log's waiters (its flusher's or its releaser's).
type Host interface {
	// Appending shows the records of a round before they are appended,
	// the first at index first, with the Machine that decided them (the
	// simulator's checks; the actor does nothing). Shell's goroutine.
	Appending(m *sku.Machine, first uint64, records []sku.Record)
	// Answer hands back calls answered at once, each with its Err set (the
	// SKU was failed, or the round's append failed). Shell's goroutine.
	Answer(calls []*core.Call)
	// Release hands back a batch once the records it rests on are durable,
	// or with the log's failure (see Release). The goroutine that
	// releases the log's waiters, in log order: it must not block.
	Release(r *Release)
	// Ticked reports a tick's expiry: the reservations it closed, and the
	// earliest expire_at left (Unix ms, math.MaxInt64: none). Shell's
	// goroutine.
	Ticked(expired int, nextExpiry int64)
	// Recovered reports each recovery from disk, done or failed.
	// Shell's goroutine.
	Recovered(r *Recovery)
	// Failed reports that the SKU became fail-stop: it answers
	// core.ErrUnavailable until a recovery succeeds. Shell's goroutine.
	Failed(cause error)
	// SnapshotWritten reports a snapshot durable, before the callers that
	// asked for it hear of it. The goroutine that runs the snapshot's Job.
	SnapshotWritten(info SnapshotInfo)
	// SnapshotDone reports the end of a snapshot's Job, written (err nil)
	// or failed, for the metrics. Shell's goroutine.
	SnapshotDone(info SnapshotInfo, err error)
}

// Release is a batch of calls the log released: the records up to the
// batch's last one are durable (Failure and every call's Err nil, but as
// the core decided them), or the log failed under it (each call's Err set
// by core.Settle). It is the shell's: valid during Host.Release only.
type Release struct {
	// Calls are the calls of the batch, in the order they were decided;
	// none for a round that only appended (a tick's expiry).
	Calls []*core.Call
	// View is the SKU as of the batch's last record: what may be published
	// once it is durable.
	View View
	// Events are the purchase events of the batch's records (a SKU of a
	// campaign-scope campaign; nil otherwise), for the campaign's registry
	// once durable (purchase.Events).
	Events []purchase.Event
	// Durable reports that the records are durable.
	Durable bool
	// Failure is the log's failure, to bring back with Shell.LogFailed
	// (nil when durable, or when the log was only closed).
	Failure error
	// Log is the log the batch waited on.
	Log *wal.Log
}

// View is the part of a SKU's state that may be read without the actor:
// what the records up to some index say.
type View struct {
	// Definition is shared by the views of one definition (the machine's
	// DefinitionStamp): a view is published for every group commit, the
	// definition changes almost never, and copying it into each view
	// cost more than the view's other fields together. Never written.
	Definition *sku.Definition
	Counts     sku.Counts
	Paused     bool
	Drawing    bool // a lottery's draw is being recorded (sku.Machine.DrawPending)
}

// Recovery is the outcome of one recovery from disk.
type Recovery struct {
	// Err is why it failed (wrapping core.ErrUnavailable); nil when done.
	Err error
	// Machine is the rebuilt state, View its view and Plan what
	// recovery.Plan found, when done.
	Machine *sku.Machine
	View    View
	Plan    *recovery.Result
	// Log is the log opened, when done.
	Log *wal.Log
}

// Executor runs work off the shell and hands each Job back as an input
// (Shell.Done) on the shell's goroutine, after running it. The actor runs
// each Job on a goroutine of its own and sends it to itself as a message;
// the simulator keeps them and runs each at a step it draws, so that it
// decides when a snapshot is written, a ranking computed or a timer fires.
// Neither method may block, nor call the Shell.
type Executor interface {
	// Go runs the job at once or later.
	Go(job *Job)
	// After runs the job no sooner than d after the now of the input that
	// asked for it (a timer; d <= 0: as soon as possible, after the
	// current input).
	After(d time.Duration, job *Job)
}

// JobKind names what a Job does.
type JobKind uint8

// Kinds of Job.
const (
	// JobSnapshot writes a frozen state as a snapshot file and prunes the
	// old ones. It is handed to the executor once the log is durable up to
	// its Index, or with the log's failure (it then writes nothing).
	JobSnapshot JobKind = iota + 1
	// JobRank ranks a lottery's draw from a frozen state.
	JobRank
	// JobRecount recounts a frozen state for an audit (audit.go). It is
	// handed to the executor once the log is durable up to its Index, or
	// with the log's failure (it then recounts nothing).
	JobRecount
	// JobDraw is a timer: the next round of a draw, after
	// Config.DrawPause. One is pending at a time.
	JobDraw
	// JobExpiry is a timer: tick again at once, reservations are still
	// due after a tick's bounded batch. One is pending at a time.
	JobExpiry
	// JobAuditDue is a timer: the end of an audit's cool-down, which
	// callers wait for. One is pending at a time.
	JobAuditDue
)

var jobNames = [...]string{"", "snapshot", "rank", "recount", "draw", "expiry", "audit-due"}

func (k JobKind) String() string {
	if int(k) >= len(jobNames) {
		return "unknown"
	}
	return jobNames[k]
}

// Job is one piece of work off the shell. Run it once, on any goroutine,
// then hand it back with Shell.Done on the shell's goroutine.
type Job struct {
	Kind JobKind
	// At is the now of the input that made the job.
	At time.Time
	// Index is the log index of the frozen state (JobSnapshot, JobRecount).
	Index uint64

	owner *Shell
	run   func()
	ran   bool

	// Results.
	snap  snapshotResult
	rank  *sku.DrawRanking
	audit auditResult
}

// Err returns the error of the job's work once it ran: a snapshot not
// written, a recount not made (nil for a ranking or a timer).
func (j *Job) Err() error {
	switch j.Kind {
	case JobSnapshot:
		return j.snap.err
	case JobRecount:
		return j.audit.err
	}
	return nil
}

// Run does the job's work (nothing for a timer). It runs once: a second
// call does nothing.
func (j *Job) Run() {
	if j.ran {
		return
	}
	j.ran = true
	if j.run != nil {
		j.run()
		j.run = nil
	}
}
