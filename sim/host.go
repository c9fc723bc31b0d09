package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/shell"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/lottery"
	"github.com/seckill/seckill/snapshot"
	"github.com/seckill/seckill/wal"
)

// The simulator is the shell's host (shell.Host) and executor
// (shell.Executor): what the actor does in production, with the
// simulated clock and the checks. Nothing of the shell is done here: the
// host only watches what the shell hands back, and the executor only
// decides when a job runs.

// host is the shell's Host: it checks each answer and release against
// the history and acknowledges what it releases.
type host struct{ r *run }

// Appending notes each record's times and counts the round's records.
func (h host) Appending(m *sku.Machine, first uint64, records []sku.Record) {
	r := h.r
	if r.hooks.records != nil {
		r.hooks.records(m, first, records)
	}
	r.round += len(records)
	for i := range records {
		rec := &records[i]
		r.recordAt[first+uint64(i)] = rec.At
		r.appendedAt[first+uint64(i)] = r.now
		switch {
		case rec.Type == sku.RecordWon && rec.Lot.FromWaitlist:
			r.faults["lottery_promoted"]++
		case rec.Type == sku.RecordLotteryEnded:
			r.faults["lottery_ended"]++
		}
	}
}

// Answer checks the calls answered at once: each with an error.
func (h host) Answer(calls []*core.Call) {
	for _, c := range calls {
		if c.Err == nil {
			h.r.fail(fmt.Errorf("%s answered at once without an error", c.Kind))
		}
		delete(h.r.restsOn, c)
	}
}

// Release checks a batch the log released and acknowledges its replies:
// none before every record it rests on is durable, none without an error
// after the log failed.
func (h host) Release(rel *shell.Release) {
	r := h.r
	if r.hooks.release != nil {
		r.hooks.release(rel) // before the replies are released, as the actor
	}
	durable := rel.Log.DurableIndex()
	for _, c := range rel.Calls {
		rests, ok := r.restsOn[c]
		delete(r.restsOn, c)
		switch {
		case !ok:
			r.fail(fmt.Errorf("%s released, but it is not waiting", c.Kind))
		case !rel.Durable && c.Err == nil:
			r.fail(fmt.Errorf("%s released without an error after the log failed", c.Kind))
		case c.Err != nil:
		case rests > durable:
			r.fail(fmt.Errorf("%s released with the log durable to %d, but its reply rests on record %d", c.Kind, durable, rests))
		default:
			r.acknowledge(c, rests)
		}
	}
	if rel.Failure != nil {
		r.inputs = append(r.inputs, logFailure{log: rel.Log, err: rel.Failure})
	}
}

// logFailure is a failure a release reported, for Shell.LogFailed.
type logFailure struct {
	log *wal.Log
	err error
}

func (h host) Ticked(int, int64) {}

// Recovered keeps the outcome for the checks after the input.
func (h host) Recovered(rec *shell.Recovery) {
	h.r.recovery = rec
	if !h.r.starting {
		h.r.faults["recovery_in_place"]++
	}
}

func (h host) Failed(error) {}

func (h host) SnapshotWritten(shell.SnapshotInfo) { h.r.faults["snapshot"]++ }

func (h host) SnapshotDone(shell.SnapshotInfo, error) {}

// executor is the shell's Executor: it keeps the jobs, and the steps run
// them when the seed says (runJobs), a timer no sooner than it is due.
type executor struct {
	r    *run
	jobs []pendingJob
}

// pendingJob is a job kept, with the time it may run from.
type pendingJob struct {
	job   *shell.Job
	due   int64  // ms
	model *model // a JobRecount: the model at its freeze
	// draw is, for a JobRank, the seed of the draw it ranks: the model's
	// draw when the job was handed over (a recovery since then rolls back
	// to a prefix of that history: the draw pending after it, if any, is
	// that draw).
	draw lottery.Hash
}

func (x *executor) Go(j *shell.Job) {
	p := pendingJob{job: j, due: x.r.now}
	switch j.Kind {
	case shell.JobRecount:
		x.r.recountStarted(j)
		p.model = x.r.saved[j.Index]
	case shell.JobRank:
		p.draw = x.r.model.drawSeed()
	}
	x.jobs = append(x.jobs, p)
}

func (x *executor) After(d time.Duration, j *shell.Job) {
	x.jobs = append(x.jobs, pendingJob{job: j, due: j.At.UnixMilli() + d.Milliseconds()})
}

// check is the bound on the jobs: one of each kind out at a time, across
// recoveries.
func (x *executor) check() error {
	var n [shell.JobAuditDue + 1]int
	for _, p := range x.jobs {
		n[p.job.Kind]++
	}
	for k := range n {
		if n[k] > 1 {
			return fmt.Errorf("%d %s jobs pending at once", n[k], shell.JobKind(k))
		}
	}
	return nil
}

// holds reports whether a job of kind is kept.
func (x *executor) holds(kind shell.JobKind) bool {
	return slices.ContainsFunc(x.jobs, func(p pendingJob) bool { return p.job.Kind == kind })
}

// take removes and returns the kept job i.
func (x *executor) take(i int) pendingJob {
	p := x.jobs[i]
	x.jobs = slices.Delete(x.jobs, i, i+1)
	return p
}

// runJobs runs the due jobs of the kinds asked, each with probability
// num/den (the step's draws), in the order they were handed over.
func (r *run) runJobs(num, den int, kinds ...shell.JobKind) error {
	for i := 0; i < len(r.exec.jobs); {
		p := r.exec.jobs[i]
		if p.due > r.now || !slices.Contains(kinds, p.job.Kind) || r.rng.IntN(den) >= num {
			i++
			continue
		}
		if err := r.runJob(r.exec.take(i)); err != nil {
			return err
		}
		i = 0 // the job may have handed over others, or ended some
	}
	return nil
}

// runJob runs a job and hands it back to the shell, and predicts its
// records with the model: a ranking records the draw's first batch (one
// of a draw a recovery lost, another draw started since, records nothing),
// a timer ticks (expiry, the draw's next round); on a failed SKU neither
// records anything.
func (r *run) runJob(p pendingJob) error {
	j := p.job
	live := r.sh.Failed() == nil
	r.model.effects, r.round = 0, 0
	r.faults["job_"+j.Kind.String()]++
	j.Run()
	if j.Kind == shell.JobRecount {
		r.recountEnds(p)
	}
	r.sh.Done(r.t(), j)
	switch j.Kind {
	case shell.JobRecount:
		r.recountEnded(p)
	case shell.JobRank:
		switch {
		case !live:
		case r.model.ranks(p.draw):
			r.rankKnown = !r.model.recordDraw(r.now, r.drawBatch())
			r.faults["lottery_ranked"]++
		case r.model.lot != nil && r.model.lot.started && !r.model.lot.done:
			r.faults["lottery_rank_stale"]++
		}
	case shell.JobDraw, shell.JobExpiry:
		if live {
			r.modelTick()
		}
	case shell.JobSnapshot:
		r.noteRetention()
	}
	if r.round != r.model.effects && live {
		return fmt.Errorf("a %s job wrote %d records, the model %d", j.Kind, r.round, r.model.effects)
	}
	return r.afterInput()
}

// finishSnapshots writes the snapshot the shell started, if any: once its
// records are durable (a flush), its job runs.
func (r *run) finishSnapshots() error {
	for i := range r.exec.jobs {
		if r.exec.jobs[i].job.Kind == shell.JobSnapshot {
			return r.runJob(r.exec.take(i))
		}
	}
	if err := r.flush(); err != nil {
		return err
	}
	for i := range r.exec.jobs {
		if r.exec.jobs[i].job.Kind == shell.JobSnapshot {
			return r.runJob(r.exec.take(i))
		}
	}
	return nil
}

// simSnapshots is the snapshots on the simulated disk: in memory, each
// checked against the history as it is written, and now and then a write
// that fails.
type simSnapshots struct {
	snapshot.Memory
	r         *run
	failWrite bool // the next Write fails (an injected fault)
}

// Write stores the snapshot and checks it: it decodes, and its state is
// the live state's at its index.
func (s *simSnapshots) Write(f *sku.Frozen, index uint64) (snapshot.Info, error) {
	if s.failWrite {
		s.failWrite = false
		s.r.faults["snapshot_write_error"]++
		return snapshot.Info{}, errInjected
	}
	info, err := s.Memory.Write(f, index)
	if err != nil {
		s.r.fail(fmt.Errorf("snapshot at %d: %w", index, err))
		return info, err
	}
	b, _ := s.Get(index)
	_, m, err := snapshot.Decode(b)
	if err != nil {
		s.r.fail(fmt.Errorf("snapshot at %d does not decode: %w", index, err))
		return info, err
	}
	if h, ok := s.r.hashAt[index]; ok && h != m.Hash() {
		s.r.fail(fmt.Errorf("snapshot at %d (written %d records later) differs from the live state at that record",
			index, s.r.sh.Core().LastIndex()-index))
	}
	return info, nil
}

// truncationSlots are the engine's truncation slots as one SKU sees
// them: free, but for a while taken by other SKUs' truncations (a fault).
type truncationSlots struct {
	taken int // the truncations still to refuse
}

func (s *truncationSlots) TryAcquire() bool {
	if s.taken > 0 {
		s.taken--
		return false
	}
	return true
}

func (s *truncationSlots) Release() {}

// firstIndex is the index of the log's first record, or of the next one
// when it holds none.
func firstIndex(log *wal.Log) uint64 {
	if first := log.FirstIndex(); first > 0 {
		return first
	}
	return log.LastIndex() + 1
}

// noteRetention counts the snapshots after which the feed retention held
// back records the snapshots no longer need (the workload reaches it).
func (r *run) noteRetention() {
	log := r.sh.Log()
	files, _ := r.snaps.List()
	if log == nil || len(files) == 0 {
		return
	}
	need := files[0].Index + 1
	records, age := r.feedRetain()
	if durable := log.DurableIndex(); records > 0 && durable+1 < need+records {
		r.faults["truncation_held_back"]++
		return
	}
	for index := firstIndex(log); index < need; index++ {
		if at, ok := r.appendedAt[index]; ok && age > 0 && at > r.now-age.Milliseconds() {
			r.faults["truncation_held_back"]++
			return
		}
	}
}

// checkTruncation checks a truncation the last input made: the log keeps
// what the oldest snapshot kept does not cover, the newest records the
// feed retention keeps, and the records appended within its age.
func (r *run) checkTruncation() error {
	log := r.sh.Log()
	if log == nil {
		return nil
	}
	first, was := firstIndex(log), r.logFirst
	r.logFirst = first
	if first <= was {
		return nil
	}
	r.faults["log_truncated"]++
	files, _ := r.snaps.List()
	if len(files) == 0 || first > files[0].Index+1 {
		return fmt.Errorf("the log was truncated to %d, beyond the oldest snapshot kept (%v)", first, files)
	}
	records, age := r.feedRetain()
	if durable := log.DurableIndex(); records > 0 && first > max(1, durable+1-min(records, durable+1)) {
		return fmt.Errorf("the log was truncated to %d, but the feed retention keeps the newest %d records up to %d", first, records, durable)
	}
	for index := was; index < first; index++ {
		if at, ok := r.appendedAt[index]; ok && age > 0 && at > r.now-age.Milliseconds() {
			return fmt.Errorf("the log was truncated to %d, but record %d was appended %d ms ago, within the feed retention's %s",
				first, index, r.now-at, age)
		}
		delete(r.appendedAt, index)
	}
	return nil
}
