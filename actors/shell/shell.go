package shell

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/purchase"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/wal"
)

// Config is what a Shell is built from: its SKU, the core's settings, and
// the parts it drives, passed in.
type Config struct {
	CampaignID, SKUID string
	// Core configures the SKU's core (package core).
	Core core.Config
	// OpenLog opens the SKU's log at each recovery: wal.Open over the SKU's
	// folder in production, wal.OpenOver with Options.Stepped over a
	// simulated store in the simulator.
	OpenLog func() (*wal.Log, error)
	// Snapshots is where the SKU's snapshots are kept (required).
	Snapshots Snapshots
	// Executor runs the work that leaves the shell's goroutine (required).
	Executor Executor
	// Host is told what callers and readers must learn (required).
	Host Host
	// SnapshotKeep is how many snapshots are kept (at least 1); the log is
	// truncated up to the oldest one kept.
	SnapshotKeep int
	// FeedRetainRecords and FeedRetainAge hold truncation back for feed
	// consumers (feed.Retention): bounded by feed.MaxRetainRecords and
	// feed.MaxRetainAge.
	FeedRetainRecords uint64
	FeedRetainAge     time.Duration
	// RetainFrom, when set, returns the first record a replication's
	// standbys still need (0: none): truncation keeps it and those after
	// (bounded by the replication layer, as feed retention is).
	RetainFrom func() uint64
	// DrawPause is the pause between two rounds of a lottery draw (0:
	// none): a JobDraw timer.
	DrawPause time.Duration
	// Truncations bounds the log truncations running at once over many
	// SKUs (nil: no bound): a truncation that finds no slot is left to the
	// next snapshot.
	Truncations Slots
	// RecoverySlot, when set, is waited for before a recovery after a
	// failure and returns its release (the engine's RecoveriesMax).
	RecoverySlot func() (release func())
	// Logger receives the shell's reports (nil: none).
	Logger *slog.Logger
	// Stopwatch reads a monotonic clock in nanoseconds, for the durations
	// reported to metrics only (a snapshot's pause and time to durable);
	// nil: they read 0. No decision reads it.
	Stopwatch func() int64
	// Recount is an audit's recount of a frozen state (nil:
	// sku.Frozen.Audit); a test holds it back to watch the SKU meanwhile.
	Recount func(*sku.Frozen) sku.Audit
}

// Slots is a counting semaphore shared by several shells.
type Slots interface {
	// TryAcquire takes a slot if one is free.
	TryAcquire() bool
	// Release frees a slot taken.
	Release()
}

// Shell runs one SKU: its core (package core) over its log, snapshots and
// executor. It is single-threaded: call its inputs from one goroutine.
type Shell struct {
	cfg    Config
	logger *slog.Logger
	core   *core.Core
	log    *wal.Log
	// failed mirrors core.Failed() after each input: set while the SKU
	// answers core.ErrUnavailable.
	failed error
	snap   snapshots // snapshot.go
	audit  audits    // audit.go
	retain feed.Retention
	timers timers // the jobs out (lottery.go, tick.go)
	// recoverWaits is set while a recovery is due but waits for a snapshot
	// being written: it runs once that Job is done (snapshot.go).
	recoverWaits bool

	buf []byte // payload scratch, reused

	// def is the definition the views share while the machine's
	// DefinitionStamp is defStamp (View).
	def      *sku.Definition
	defStamp uint64
}

// timers says which of the jobs the core may ask again and again are out:
// one of each kind at a time.
type timers struct {
	rank, draw, expiry bool
}

// New returns the shell of a SKU that has not recovered yet: it answers
// core.ErrUnavailable until Recover succeeds.
func New(cfg Config) *Shell {
	if cfg.OpenLog == nil || cfg.Snapshots == nil || cfg.Executor == nil || cfg.Host == nil {
		panic("shell: Config needs OpenLog, Snapshots, Executor and Host")
	}
	cfg.SnapshotKeep = max(cfg.SnapshotKeep, 1)
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Shell{
		cfg:    cfg,
		logger: logger.With("campaign", cfg.CampaignID, "sku", cfg.SKUID),
		core:   core.New(cfg.Core),
		retain: feed.NewRetention(cfg.FeedRetainRecords, cfg.FeedRetainAge),
		failed: fmt.Errorf("%w: not recovered yet", core.ErrUnavailable),
	}
}

// Core returns the SKU's core: read it (its Machine, LastIndex, Failed),
// never drive it; the shell does.
func (s *Shell) Core() *core.Core { return s.core }

// Log returns the log open now (nil before the first recovery, or after
// a recovery that could not open it). It is replaced at each recovery.
func (s *Shell) Log() *wal.Log { return s.log }

// Failed returns why the SKU answers core.ErrUnavailable, or nil.
func (s *Shell) Failed() error { return s.failed }

// RecoveryWaits reports whether a recovery is due but waits for a
// snapshot's Job to be done.
func (s *Shell) RecoveryWaits() bool { return s.recoverWaits }

// View returns the SKU's view as decided so far (ahead of the disk until
// the log is durable).
func (s *Shell) View() View {
	m := s.core.Machine()
	if stamp := m.DefinitionStamp(); s.def == nil || stamp != s.defStamp {
		d := m.Definition()
		s.def, s.defStamp = &d, stamp
	}
	return View{Definition: s.def, Counts: m.Counts(), Paused: m.Paused(), Drawing: m.DrawPending()}
}

// Decide decides one call at now (core.Core.Decide); Commit ends the
// round. Calls decided together and committed once are one group commit.
func (s *Shell) Decide(now time.Time, c *core.Call) { s.core.Decide(now, c) }

// Commit ends the round of the calls decided since the last input: it
// appends their records to the log (without waiting for the disk), answers
// at once the calls the core answers so, and hands the others to the log,
// which releases them (Host.Release) once every record they rest on is
// durable. It then does what the core asks: start a snapshot, rank a
// draw, recover.
func (s *Shell) Commit(now time.Time) {
	s.noteDurable()
	s.commit(now)
}

// noteDurable tells the core how far the log is durable (the end of a
// backoff after a recovery). One load and one comparison. Each input
// calls it first, and so does each report of a log failure to the core
// (a failed append, LogFailed): a record appended after a recovery that
// became durable before the failure ends the backoff, so the failure is
// a first one again, however the flushes and the inputs interleave (a
// batch made durable and the next, queued, failing with no input between).
func (s *Shell) noteDurable() {
	if s.log != nil {
		durable := s.log.DurableIndex()
		if mutantBackoffReset {
			durable = s.log.LastIndex()
		}
		s.core.Durable(durable)
	}
}

// commit ends the core's round and does what its Actions ask.
func (s *Shell) commit(now time.Time) *core.Actions {
	rd := s.core.Ready()
	if len(rd.Records) > 0 {
		s.cfg.Host.Appending(s.core.Machine(), rd.FirstIndex, rd.Records)
	}
	appended, err := s.appendRecords(rd)
	if err != nil {
		// The log may have committed records since the round began (the
		// flusher runs meanwhile; a stepped log's append commits a full
		// batch) before it failed: the core hears how far it is durable
		// before it hears of the failure (noteDurable).
		s.noteDurable()
	}
	events := purchase.Events(s.core.Machine(), rd.Records[:appended])
	// Advance freezes the state for a snapshot only on a round that
	// ticked: the pause is timed then, not on every round.
	var start int64
	if rd.Ticked {
		start = s.stopwatch()
	}
	act := s.core.Advance(appended, err)
	var pause time.Duration
	if rd.Ticked {
		pause = time.Duration(s.stopwatch() - start)
	}
	if err != nil {
		s.noteFailure(err)
	} else if s.failed == nil && s.log.LastIndex() != s.core.LastIndex() {
		// A healthy SKU has an open log that holds every record decided.
		panic(fmt.Sprintf("shell: %s/%s: the log ends at record %d, the core at %d",
			s.cfg.CampaignID, s.cfg.SKUID, s.log.LastIndex(), s.core.LastIndex()))
	}
	if len(act.Answer) > 0 {
		s.cfg.Host.Answer(act.Answer)
	}
	if w := act.Wait; w != nil {
		s.await(w, events)
	}
	if act.Snapshot != nil {
		s.startSnapshot(now, act.Snapshot, pause)
	}
	s.lotteryActions(now, act)
	if act.Recover {
		s.recoverAgain(now)
	}
	return act
}

// appendRecords hands the round's records to the log's pending batch; it
// does not wait for the disk. It returns how many it handed over, and the
// error that stopped it (the log failed). It panics if the log gives a
// record another index than the core expects (the two would disagree on
// every reply from there on).
func (s *Shell) appendRecords(rd core.Ready) (appended int, err error) {
	for i := range rd.Records {
		s.buf = rd.Records[i].AppendPayload(s.buf[:0])
		index, err := s.log.Append(byte(rd.Records[i].Type), s.buf)
		if err != nil {
			return i, err
		}
		if want := rd.FirstIndex + uint64(i); index != want {
			panic(fmt.Sprintf("shell: %s/%s: the log appended record %d at index %d, the core expected %d",
				s.cfg.CampaignID, s.cfg.SKUID, i, index, want))
		}
	}
	return len(rd.Records), nil
}

// await hands a round's waiting calls to the log as one batch.
func (s *Shell) await(w *core.Wait, events []purchase.Event) {
	b := batchPool.Get().(*batch)
	b.host = s.cfg.Host
	b.rel.Calls = append(b.rel.Calls[:0], w.Calls...)
	b.rel.View, b.rel.Events, b.rel.Log = s.View(), events, s.log
	s.log.Await(w.Index, b) // the calls belong to their callers again from here on
}

// LogFailed reports at now that log failed under a batch waiting on it
// (Release.Failure): the SKU stops at once, rather than at its next
// append, and its backoff counts from now. A failure of a log the shell
// no longer runs (an earlier incarnation's), or of a closed one, is
// ignored.
func (s *Shell) LogFailed(now time.Time, log *wal.Log, err error) {
	if log == nil || log != s.log || err == nil || errors.Is(err, wal.ErrClosed) {
		return
	}
	s.failAt(now, err)
}

// failAt makes the SKU fail-stop for a log failure seen outside a round
// (a failed truncation, a batch whose write or fsync failed). A SKU
// failed already stays as it is.
func (s *Shell) failAt(now time.Time, err error) {
	if s.failed != nil {
		return
	}
	s.noteDurable()
	s.core.LogFailed(now, err)
	s.noteFailure(err)
}

// noteFailure tells the host that the core failed the SKU (fail-stop: the
// Machine may hold decisions that are not on disk) and says in the log
// whether it heals by itself.
func (s *Shell) noteFailure(cause error) {
	failed := s.core.Failed()
	if failed == nil || s.failed != nil {
		s.failed = failed
		return
	}
	s.failed = failed
	s.cfg.Host.Failed(failed)
	if at, armed := s.core.RetryAt(); armed {
		s.logger.Error("SKU log failed; fail-stop until it recovers from disk", "err", cause, "retry_at", at)
		return
	}
	// After a failed fsync the page cache may hold records the disk lost:
	// the core never rebuilds from the file in place (wal.ErrSyncFailed).
	s.logger.Error("SKU log failed; fail-stop until the process restarts (check the disk first)", "err", cause)
}

// Done brings back a job the executor ran, at now. A job of another shell
// (an earlier incarnation of the actor) changes nothing: its callers were
// told by the job itself, or by that shell's Stop. A job made before a
// recovery still counts: a snapshot is never written across one (the
// recovery waits for it), a recount reads durable records only, a
// ranking of a draw the recovery lost is dropped by the core, which asks
// for the pending draw's (core.Core.Ranked), and a timer only ticks. So
// one job of each kind is out at a time, across recoveries: the host's
// mailbox holds at most that many.
func (s *Shell) Done(now time.Time, j *Job) {
	if !j.ran {
		panic(fmt.Sprintf("shell: %s/%s: a %s job handed back without running", s.cfg.CampaignID, s.cfg.SKUID, j.Kind))
	}
	if j.owner != s {
		return
	}
	s.noteDurable()
	switch j.Kind {
	case JobSnapshot:
		s.snapshotDone(now, j)
	case JobRank:
		s.ranked(now, j)
	case JobRecount:
		s.recounted(now, j)
	case JobDraw:
		s.timers.draw = false
		s.tick(now)
	case JobExpiry:
		s.timers.expiry = false
		s.tick(now)
	case JobAuditDue:
		s.audit.timer = false
		s.auditDue(now)
	}
}

// job returns a new job of kind made at now.
func (s *Shell) job(kind JobKind, now time.Time) *Job {
	return &Job{Kind: kind, At: now, owner: s}
}

// Stop ends the shell (the actor stops or restarts): it answers the
// callers waiting for a snapshot to start or for an audit
// core.ErrUnavailable and closes the log, which releases its waiters (a
// snapshot waiting on it then writes nothing). The host then waits for
// the snapshot Jobs running: a new shell must not recover while one
// writes.
func (s *Shell) Stop() {
	s.answerQueued(core.ErrUnavailable)
	s.stopAudits(core.ErrUnavailable)
	s.closeLog()
}

func (s *Shell) closeLog() {
	if s.log != nil {
		if err := s.log.Close(); err != nil {
			s.logger.Error("closing SKU log", "err", err)
		}
		s.log = nil
	}
}

func (s *Shell) stopwatch() int64 {
	if s.cfg.Stopwatch == nil {
		return 0
	}
	return s.cfg.Stopwatch()
}
