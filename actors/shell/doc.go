// Package shell holds everything between one SKU's pure core (package
// actors/core, which decides with sku.Machine) and its I/O: it is the one
// shell around the core, hosted by the protoactor actor in production
// (package actors) and driven by the simulator over its simulated disk,
// clock and faults (package sim). TigerBeetle's simulator swaps only
// storage, network and time under the real replica; this package is what
// both run, so that the simulator checks the code that serves.
//
// # Who owns what
//
//	actors/core   decides: calls, ticks, fail-stop and the recovery backoff,
//	              when a snapshot is due, when a draw is ranked (pure, no I/O)
//	actors/shell  does what the core asks, over the parts passed in: opens and
//	              recovers the log (recovery.Plan over the log and snapshots),
//	              appends a round's records, hands its calls to the log's
//	              Await (group commit), writes snapshots off the shell, prunes
//	              them, truncates the log (feed retention holding it back, the
//	              truncation slots), ranks draws off the shell, the draw's and
//	              the expiry's timers, audits (recounts off the shell, their
//	              cool-down), fail-stop reports
//	actors        hosts it: protoactor messages become the shell's inputs, with
//	              the engine's clock; publishes what the ingress reads; wakes
//	              callers; runs jobs on goroutines and timers on the wall clock
//	sim           drives it: its disk under the log (wal.OpenOver, Stepped), its
//	              snapshots (snapshot.Memory), its clock, its executor (it
//	              decides when a job runs), and checks it against a model
//
// # Inputs
//
// A Shell is single-threaded: its inputs are called from one goroutine
// (the actor's, the simulator's), each with the time it happens at, so
// that time reaches it only as data:
//
//	Recover(now)                 open the log and rebuild the SKU (a start)
//	Decide(now, call) ...        decide calls, then
//	Commit(now)                  append their records, hand them to the log
//	Tick(now)                    expiry, the lottery's timers, a due snapshot or recovery
//	RequestSnapshot(now, w)      an operator's snapshot
//	Audit(now, w)                an operator's audit
//	Done(now, job)               a job the executor ran (Executor)
//	LogFailed(now, log, err)     a batch's write or fsync failed (Release.Failure)
//	Stop()                       the host stops
//
// What leaves it goes through the parts passed in (Config): the log
// (*wal.Log, opened by Config.OpenLog), the snapshot store (Snapshots),
// the Executor that runs work off the shell and hands it back as an input
// (a snapshot's write, a draw's ranking, an audit's recount, a timer), and
// the Host, told what callers and readers must learn (answers, releases,
// recoveries). No decision reads a clock: time is the inputs' now, and a
// timer is a Job the executor runs no sooner than asked.
//
// # Rules the shell owns
//
//   - A snapshot is written only once the log is durable up to its index:
//     its Job is handed to the executor by the log's waiter.
//   - One snapshot at a time; callers that ask while one runs share the
//     next. A recovery waits for the snapshot being written (it removes
//     unfinished files and reads the snapshots).
//   - After a snapshot, the log is truncated up to the oldest snapshot
//     kept, less what feed retention holds back (newest FeedRetainRecords
//     records, and those appended within FeedRetainAge), and only with a
//     truncation slot free; a failed truncation of a failed log is a log
//     failure, any other changes nothing.
//   - One job of each kind out at a time, across recoveries (Done says why
//     a job made before a recovery still counts): a host's mailbox holds
//     at most that many results.
//   - One recount of a SKU at a time, shared by the callers meanwhile while
//     no record was appended since its freeze (the others wait for the
//     next: an audit shows what its caller could read); the next starts no
//     sooner after it ended than it took (from its freeze to its result); a
//     result no caller took goes to the next caller within AuditKeep.
//   - Jobs of another shell (an earlier incarnation) change nothing.
package shell
