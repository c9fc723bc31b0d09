// Package sim is the deterministic simulation of one SKU engine, in the
// spirit of TigerBeetle's VOPR and FoundationDB's simulator: a history of
// calls, ticks, crashes and storage and clock faults is drawn from a seed
// and run on one goroutine, in simulated time, over the real code, and
// every step is checked against an independent model. The same seed always
// runs the same history (Run); a failing one is shrunk to a short step list
// (Shrink) and replayed with `make sim SEED=N` (cmd/seckill-sim).
//
// What runs is the engine's own code: the SKU's sku.Machine driven by the
// actor core (actors/core), its wal.Log opened with wal.Options.Stepped
// (no goroutine; Flush is group commit's one step) by wal.OpenOver over a
// simulated store, and recovery.Plan over that log and in-memory snapshot
// files (snapshot.Marshal, snapshot.Memory). The simulator is the shell
// around the core, doing what the protoactor shell in package actors does:
// append Ready's records, release the replies of a Wait once the log is
// durable, write the snapshots the core asks for, prune them to two and
// truncate the log (wal.Log.TruncateBefore), recover when the core says so.
//
// Files:
//
//	disk.go   files with a page cache (writes, fsync, failed fsync, power loss) and directories
//	store.go  a wal.SegmentStore over a directory, in tidwall/wal's segment layout
//	model.go  the model: the SKU's rules, written apart from the engine's code
//	check.go  comparisons of the engine's state and replies with the model
//	plan.go   the steps a seed draws
//	run.go    Run and the shell: open and recover, decide, append, flush, snapshot, crash
//	step.go   each step, and the workload's arguments
//	seeds.go  many seeds side by side (one goroutine per history), the shrinker
//	admission.go        the admission mode: buyers admitted by package admission over a disk that slows down
//	admission_check.go  its checks: the wait bound, the ramp's steps, recovery
//
// The checks, the faults and what the simulation cannot model are listed
// in docs/testing.md ("The deterministic simulator").
package sim
