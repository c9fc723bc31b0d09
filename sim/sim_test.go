package sim

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/seckill/seckill/wal"
)

// TestSeedSlice is the slice of the simulation that CI runs on every
// change (about a minute): a fixed range of seeds, so a failure names a
// seed that `make sim SEED=N` replays.
func TestSeedSlice(t *testing.T) {
	seeds := uint64(2000)
	if raceEnabled {
		seeds = 300
	}
	if testing.Short() {
		seeds /= 10
	}
	sum := RunSeeds(SeedsOptions{First: 1, Count: seeds, Steps: 200})
	t.Logf("seeds %d, steps %d, faults and events %v", sum.Seeds, sum.Steps, sum.Faults)
	for _, kind := range []string{"crash", "crash_in_fsync", "write_error", "write_error_after_a_batch", "fsync_error", "torn", "snapshot", "log_truncated", "restore", "recovery_in_place",
		"lottery_ranked", "lottery_promoted", "lottery_ended",
		"snapshot_write_error", "truncation_slots_taken", "truncation_held_back", "recovery_waits_for_snapshot", "job_draw", "job_recount", "job_audit-due", "audit_kept"} {
		if sum.Faults[kind] == 0 {
			t.Errorf("no %s in %d seeds: the workload no longer reaches it", kind, seeds)
		}
	}
	for _, reply := range []string{"reserve ACCEPTED", "reserve SOLD_OUT", "reserve SOLD_OUT (duplicate)", "reserve ACCEPTED (duplicate)",
		"reserve ALREADY_PURCHASED", "reserve REQUEST_ID_REUSED", "reserve INVALID", "reserve NOT_STARTED", "reserve ENDED", "reserve PAUSED",
		"pay PAID", "pay ALREADY_PAID", "pay PAYMENT_CONFLICT", "pay REFUND_REQUIRED", "pay NOT_FOUND",
		"close CLOSED", "close ALREADY_CLOSED", "close NOT_EXPIRED", "close NOT_CLOSABLE",
		"release RELEASED", "release ALREADY_RELEASED", "release NOT_CLOSED", "define OK", "define INVALID",
		"enter ENTERED", "enter ENTERED (duplicate)", "enter ENTRIES_CLOSED", "enter REQUEST_ID_REUSED", "enter SUBJECT_LIMIT", "reserve LOTTERY_SALE",
		"draw DRAW_STARTED", "draw ALREADY_DRAWN", "draw ENTRIES_OPEN", "entry found",
		"grant OK", "return OK", "epoch OK", "epoch INVALID"} { // the last four: celled SKUs (model_cells.go)
		if sum.Replies[reply] == 0 {
			t.Errorf("no %q reply in %d seeds: the workload no longer reaches it", reply, seeds)
		}
	}
	for i, f := range sum.Failures {
		if i == 3 {
			t.Errorf("... and %d more failing seeds", len(sum.Failures)-i)
			break
		}
		keep, shrunk := Shrink(f)
		indexes, steps := Kept(f, keep)
		var b bytes.Buffer
		for j := range steps {
			fmt.Fprintf(&b, "\n  step %d: %s", indexes[j], steps[j])
		}
		t.Errorf("seed %d failed at step %d: %v\nshortest failing history (%v):%s\nreplay: make sim SEED=%d",
			f.Seed, f.Step, f.Err, shrunk.Err, b.String(), f.Seed)
	}
}

// The same seed gives the same history, faults and verdict.
func TestRunIsDeterministic(t *testing.T) {
	for _, seed := range []uint64{3, 77} {
		var a, b bytes.Buffer
		ra := Run(Options{Seed: seed, Steps: 150, Trace: &a})
		rb := Run(Options{Seed: seed, Steps: 150, Trace: &b})
		if a.String() != b.String() || fmt.Sprint(ra.Faults) != fmt.Sprint(rb.Faults) || fmt.Sprint(ra.Err) != fmt.Sprint(rb.Err) {
			t.Fatalf("seed %d ran two ways: %v / %v, %v / %v", seed, ra.Faults, rb.Faults, ra.Err, rb.Err)
		}
	}
}

// A crash keeps fsynced bytes, a prefix of the others, and never the bytes
// of a failed fsync, even though reads saw them before the crash.
func TestFileCrashKeepsDurableBytesOnly(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		f := &file{}
		f.cache = append(f.cache, "durable|"...)
		f.sync(false)
		f.cache = append(f.cache, "lost|"...)
		f.sync(true) // fsync failed: the pages are clean in the cache, not on disk
		if string(f.cache) != "durable|lost|" {
			t.Fatalf("reads after a failed fsync see %q", f.cache)
		}
		f.cache = append(f.cache, "maybe"...)
		f.crash(r)
		got := string(f.cache)
		if len(got) < 13 || got[:8] != "durable|" || got[8:13] != "\x00\x00\x00\x00\x00" {
			t.Fatalf("after the crash: %q", got)
		}
		if string(f.cache) != string(f.disk) {
			t.Fatal("after the crash the disk and the cache differ")
		}
	}
}

// A directory change not yet fsynced may be lost at a crash; one followed
// by SyncDir never is.
func TestDirectoryCrashKeepsSyncedEntries(t *testing.T) {
	lost := 0
	for seed := range uint64(100) {
		d := newDirectory()
		d.create("a")
		d.syncDir()
		d.create("b")
		d.crash(rand.New(rand.NewPCG(seed, 0)), map[string]int{})
		if _, ok := d.entries["a"]; !ok {
			t.Fatal("a synced entry was lost")
		}
		if _, ok := d.entries["b"]; !ok {
			lost++
		}
	}
	if lost == 0 || lost == 100 {
		t.Fatalf("an unsynced entry was lost in %d of 100 crashes, want some", lost)
	}
}

// Over the simulated store, OpenOver cuts a torn tail with wal's rule and
// the log goes on after the records that were fsynced.
func TestOpenOverCutsTornTail(t *testing.T) {
	dir := newDirectory()
	clock := int64(0)
	faults := &storeFaults{}
	open := func() *wal.Log {
		l, err := wal.OpenOver("test", openLogStore(dir, 4096, faults, &clock), wal.Options{Stepped: true, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := open()
	for i := range 3 {
		if _, err := l.Append(1, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(1, []byte("never fsynced")); err != nil {
		t.Fatal(err)
	}
	faults.crashInSync = true
	if err := l.Flush(); err == nil {
		t.Fatal("the fsync the power cut returned no error")
	}
	tail := dir.entries[segmentName(1)]
	tail.cache = tail.cache[:len(tail.cache)-3] // the unsynced entry, torn
	tail.disk = append([]byte(nil), tail.cache...)
	faults.crashInSync = false
	l = open()
	if l.LastIndex() != 3 {
		t.Fatalf("after the cut the log ends at %d, want 3", l.LastIndex())
	}
	if _, err := l.Append(1, []byte("next")); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := l.Replay(1, func(index uint64, typ byte, payload []byte) error {
		got = append(got, string(payload))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint([]string{"\x00", "\x01", "\x02", "next"}) {
		t.Fatalf("replayed %q", got)
	}
	if err := l.Close(); err != nil && !errors.Is(err, wal.ErrClosed) {
		t.Fatal(err)
	}
}

// TestCampaignSeeds runs campaign-mode histories (campaign.go): SKUs of a
// campaign whose purchase_limit is "campaign", crashes between claims and
// reservations, lost answers, failed logs; the checks find no user with
// live purchases on two SKUs and no live purchase the registry forgot.
func TestCampaignSeeds(t *testing.T) {
	seeds := uint64(600)
	if raceEnabled || testing.Short() {
		seeds = 100
	}
	faults, replies := map[string]int{}, map[string]int{}
	for seed := uint64(1); seed <= seeds; seed++ {
		res := RunCampaign(Options{Seed: seed, Steps: 200})
		for k, n := range res.Faults {
			faults[k] += n
		}
		for k, n := range res.Replies {
			replies[k] += n
		}
		if res.Err != nil {
			t.Fatalf("campaign seed %d failed at step %d: %v (replay: RunCampaign(Options{Seed: %d, Steps: 200}))", seed, res.Step, res.Err, seed)
		}
	}
	t.Logf("campaign seeds %d: faults %v, replies %v", seeds, faults, replies)
	for _, kind := range []string{"campaign_crash", "answer_lost", "probe", "probe_unanswered", "write_error", "fsync_error",
		"lottery_ranked", "lottery_promoted", "lottery_ended"} {
		if faults[kind] == 0 {
			t.Errorf("no %s in %d campaign seeds", kind, seeds)
		}
	}
	for _, reply := range []string{"claim PROCEED", "claim HELD", "claim WAIT", "claim PROBE", "reserve ACCEPTED", "reserve ALREADY_PURCHASED", "close CLOSED",
		"enter ENTERED", "draw DRAW_STARTED", "held by an entry", "held by a purchase"} {
		if replies[reply] == 0 {
			t.Errorf("no %q in %d campaign seeds", reply, seeds)
		}
	}
	if seeds >= 600 && replies["draw ENDED"] == 0 { // a draw asked after end_at: ~27 in 600 seeds
		t.Errorf("no draw ENDED in %d campaign seeds", seeds)
	}
}

// TestAdmissionSeeds runs admission histories (admission.go): buyers in
// front of a SKU whose disk's fsyncs go fast, medium, slow, erratic and
// stall; the checks find no buyer that waited beyond its bound, no ramp
// faster than doubling per commit, and admission open again once the disk
// has been fast for a while.
func TestAdmissionSeeds(t *testing.T) {
	seeds := uint64(200)
	if raceEnabled || testing.Short() {
		seeds = 20
	}
	sum := RunSeeds(SeedsOptions{First: 1, Count: seeds, Steps: 200, Mode: ModeAdmission})
	t.Logf("admission seeds %d: faults %v, replies %v", seeds, sum.Faults, sum.Replies)
	for _, f := range sum.Failures {
		t.Fatalf("admission seed %d failed at step %d: %v (replay: make sim SIM_MODE=-admission SEED=%d)", f.Seed, f.Step, f.Err, f.Seed)
	}
	for _, kind := range []string{"phase_fast", "phase_medium", "phase_slow", "phase_erratic", "phase_stall",
		"wait_checked", "wait_unchecked", "recovery_checked"} {
		if sum.Faults[kind] == 0 {
			t.Errorf("no %s in %d admission seeds", kind, seeds)
		}
	}
	for _, reply := range []string{"reserve ACCEPTED", "reserve THROTTLED", "reserve probe"} {
		if sum.Replies[reply] == 0 {
			t.Errorf("no %q in %d admission seeds", reply, seeds)
		}
	}
}

// The same admission seed gives the same history.
func TestAdmissionIsDeterministic(t *testing.T) {
	var a, b bytes.Buffer
	ra := RunAdmission(Options{Seed: 5, Steps: 100, Trace: &a})
	rb := RunAdmission(Options{Seed: 5, Steps: 100, Trace: &b})
	if a.String() != b.String() || fmt.Sprint(ra.Faults, ra.Replies, ra.Err) != fmt.Sprint(rb.Faults, rb.Replies, rb.Err) {
		t.Fatalf("seed 5 ran two ways: %v %v / %v %v", ra.Faults, ra.Replies, rb.Faults, rb.Replies)
	}
}

// TestCellsSeeds runs cells-mode histories (cells_mode.go): the real cells
// agent over the ledger in memory with failing calls, answers lost after
// the commit, outages, fencing, another cell and return requests, its
// engine the SKU's shell under the SKU mode's faults.
func TestCellsSeeds(t *testing.T) {
	seeds := uint64(300)
	if raceEnabled || testing.Short() {
		seeds = 60
	}
	sum := RunSeeds(SeedsOptions{First: 1, Count: seeds, Steps: 200, Mode: ModeCells})
	t.Logf("cells seeds %d: faults %v, replies %v", seeds, sum.Faults, sum.Replies)
	for _, f := range sum.Failures {
		t.Fatalf("cells seed %d failed at step %d: %v (replay: make sim SEED=%d SIM_MODE=-cells)", f.Seed, f.Step, f.Err, f.Seed)
	}
	for _, kind := range []string{"ledger_call_failed", "ledger_call_while_down", "ledger_answer_lost_after_commit", "ledger_answer_lost",
		"agent_fenced", "cell_restarted_after_fencing", "epoch_taken_by_another_process", "other_cell_top_up", "other_cell_return",
		"agent_top_ups", "agent_top_up_retries", "agent_reconciled", "agent_credits", "crash", "fsync_error", "clock_backward"} {
		if sum.Faults[kind] == 0 {
			t.Errorf("no %s in %d cells seeds: the workload no longer reaches it", kind, seeds)
		}
	}
	for _, reply := range []string{"grant OK", "return OK", "epoch OK", "cell report", "reserve ACCEPTED", "reserve SOLD_OUT"} {
		if sum.Replies[reply] == 0 {
			t.Errorf("no %q in %d cells seeds", reply, seeds)
		}
	}
}

// A cells-mode seed runs the same history twice; a failing one shrinks.
func TestCellsRunIsDeterministic(t *testing.T) {
	for _, seed := range []uint64{5, 28} {
		var a, b bytes.Buffer
		ra := RunCells(Options{Seed: seed, Steps: 150, Trace: &a})
		rb := RunCells(Options{Seed: seed, Steps: 150, Trace: &b})
		if a.String() != b.String() || fmt.Sprint(ra.Faults) != fmt.Sprint(rb.Faults) || fmt.Sprint(ra.Err) != fmt.Sprint(rb.Err) {
			t.Fatalf("seed %d ran two ways: %v / %v, %v / %v", seed, ra.Faults, rb.Faults, ra.Err, rb.Err)
		}
	}
}

// TestReplicasSeeds runs replica-set histories (replicas_mode.go): three
// replicas' role loops over the coordinator in memory, each primary the
// engine's shell over a replicated wal, each standby's copy applied by the
// stream's code, under network faults, crashes, power loss, pauses, clock
// jumps and switchovers.
func TestReplicasSeeds(t *testing.T) {
	seeds := uint64(500)
	if raceEnabled || testing.Short() {
		seeds = 200
	}
	sum := RunSeeds(SeedsOptions{First: 1, Count: seeds, Steps: 200, Mode: ModeReplicas})
	t.Logf("replicas seeds %d: faults %v, replies %v", seeds, sum.Faults, sum.Replies)
	for _, f := range sum.Failures {
		t.Fatalf("replicas seed %d failed at step %d: %v (replay: make sim SEED=%d SIM_MODE=-replicas)", f.Seed, f.Step, f.Err, f.Seed)
	}
	for _, kind := range []string{"crash", "power_loss", "pause", "clock_jump", "partition_etcd", "partition_replicas", "net_reset",
		"net_delay", "net_duplicate", "net_stale_replay", "refused_stale_epoch", "promote", "demote", "lost", "cut", "sync_strict",
		"power_loss_in_fsync", "torn", "switchover", "snapshot", "base_copy", "base_installed", "beyond_retention", "crash_mid_install",
		"snapshot_checked", "recovery_checked", "snapshot_shipped", "snapshot_installed", "standby_truncated",
		"promoted_truncated_copy", "copy_recovery_checked", "catch_up_compacted"} {
		if sum.Faults[kind] == 0 {
			t.Errorf("no %s in %d replicas seeds: the workload no longer reaches it", kind, seeds)
		}
	}
	if sum.Replies["acknowledged"] == 0 {
		t.Errorf("nothing acknowledged in %d replicas seeds", seeds)
	}
}

// A replica-set seed runs the same history twice.
func TestReplicasRunIsDeterministic(t *testing.T) {
	var a, b bytes.Buffer
	ra := RunReplicas(Options{Seed: 7, Steps: 150, Trace: &a})
	rb := RunReplicas(Options{Seed: 7, Steps: 150, Trace: &b})
	if a.String() != b.String() || fmt.Sprint(ra.Faults) != fmt.Sprint(rb.Faults) || fmt.Sprint(ra.Err) != fmt.Sprint(rb.Err) {
		t.Fatalf("seed 7 ran two ways: %v / %v, %v / %v", ra.Faults, rb.Faults, ra.Err, rb.Err)
	}
}

// The check after each step fails when a replica the sync key names
// lacks an acknowledged record, or holds another one at its index.
func TestReplicasCheckFindsAMissingRecord(t *testing.T) {
	s := newReplicasRun(Options{Seed: 1})
	for range 30 {
		s.now += 100
		if err := s.settle(); err != nil {
			t.Fatal(err)
		}
	}
	var primary *rsReplica
	for _, rep := range s.reps {
		if rep.primary {
			primary = rep
		}
	}
	if primary == nil {
		t.Fatal("no primary after 3 s")
	}
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
	last := uint64(len(s.acked[0]))
	if last == 0 {
		t.Fatal("the definition was not acknowledged in 3 s")
	}
	s.acked[0][last+1] = []byte("a frame") // acknowledged, and held by nobody
	if err := s.check(); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("holds nothing fsynced at index %d of sku0", last+1)) {
		t.Fatalf("check: %v", err)
	}
	delete(s.acked[0], last+1)
	s.acked[0][last] = []byte("another frame") // acknowledged, and held as another record
	if err := s.check(); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("holds another record at index %d of sku0", last)) {
		t.Fatalf("check: %v", err)
	}
}

// The check fails when a replica that is not the primary keeps a copy it
// cannot recover from: its log begins after the record its oldest
// snapshot (or, with none, record 1) needs.
func TestReplicasCheckFindsACopyItCannotRecover(t *testing.T) {
	s := newReplicasRun(Options{Seed: 2})
	var standby *rsReplica
	for range 100 {
		s.now += 100
		for _, rep := range s.reps {
			if rep.primary && s.running(rep) {
				s.reserve(rep, rep.skus[0])
				s.commitRound(rep, rep.skus[0])
			}
		}
		if err := s.settle(); err != nil {
			t.Fatal(err)
		}
		for _, rep := range s.reps {
			files, _ := rep.skus[0].snaps.List()
			if log := rep.skus[0].log; !rep.primary && rep.up && log.DurableIndex() >= 3 && log.FirstIndex() == 1 && len(files) == 0 {
				standby = rep
			}
		}
		if standby != nil {
			break
		}
	}
	if standby == nil {
		t.Fatal("no standby holding records 1..3 and no snapshot in 10 s")
	}
	if _, err := standby.skus[0].log.TruncateBefore(3); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("replica %s holds no snapshot of sku0 but its log (as a power loss keeps it) begins at 3", standby.name)
	if err := s.check(); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("check: %v, want %q", err, want)
	}
}
