// Package sim is the deterministic simulation of one SKU engine, in the
// spirit of TigerBeetle's VOPR and FoundationDB's simulator: a history of
// calls, ticks, crashes and storage and clock faults is drawn from a seed
// and run on one goroutine, in simulated time, over the real code, and
// every step is checked against an independent model. The same seed always
// runs the same history (Run); a failing one is shrunk to a short step list
// (Shrink) and replayed with `make sim SEED=N` (cmd/seckill-sim).
//
// What runs is the engine's own code: one SKU's shell (package
// actors/shell, the same shell the protoactor actor hosts in production)
// around its core (actors/core) and sku.Machine, over its wal.Log opened
// with wal.Options.Stepped (no goroutine; Flush is group commit's one
// step) by wal.OpenOver over a simulated store, and snapshots in memory
// (snapshot.Memory). The simulator swaps only the disk, the clock and the
// executor under it, as TigerBeetle's VOPR swaps storage, network and
// time: the shell appends, hands replies to the log's waiters, writes and
// prunes snapshots, truncates the log (the feed retention and the
// truncation slots holding it back), recovers, ranks draws and runs its
// timers exactly as in production. Nothing of the shell is written here.
// In cells mode the cell's agent (package cells) is the same code too,
// over ledger.Memory (the etcd ledger's rules in memory): the simulator
// swaps only the ledger's link (faults) and the agent's clock.
//
// Who owns what in this package:
//
//	the disk      disk.go, store.go: files, fsync, power loss; the log's segment store
//	the host      host.go: the shell's Host (checks each answer and release, acknowledges)
//	              and its Executor (keeps the jobs the shell hands over: a snapshot's
//	              write, a ranking, the draw's and the expiry's timers; a step decides
//	              when each runs, a timer never before it is due)
//	the model     model*.go: the SKU's rules, written apart from the engine's code
//	the checks    check*.go, and those of run.go and host.go
//	the steps     plan.go, step*.go, batch.go, cells_step.go, campaign.go
//
// Files:
//
//	disk.go             files with a page cache (writes, fsync, failed fsync, power loss) and directories
//	store.go            a wal.SegmentStore over a directory, in tidwall/wal's segment layout
//	host.go             the shell's host and executor; simulated snapshots and truncation slots
//	model.go            the model: the SKU's rules, written apart from the engine's code
//	check.go            comparisons of the engine's state and replies with the model
//	plan.go             the steps a seed draws
//	run.go              Run: a process start, recovery checks, decide, commit, flush, crash
//	step.go             each step, and the workload's arguments
//	seeds.go            many seeds side by side (one goroutine per history), the shrinker
//	admission.go        the admission mode: buyers admitted by package admission in front of the shell,
//	                    over a disk that slows down; its host (the inbox and the actor's rounds)
//	admission_check.go  its checks: the wait bound, the ramp's steps, recovery
//	cells_mode.go       the cells mode: the real cells agent, driven by Step on the simulated clock,
//	                    over the ledger in memory; its engine the SKU's shell; the ledger's checks
//	cells_ledger.go     the ledger as the agent reaches it: failing calls, lost answers, outages
//	replicas_mode.go    the replica-set mode: three replicas' real role loops (replica.Node) over the
//	                    coordinator in memory, each primary the engine's shell over a replicated wal,
//	                    each standby's copy applied by the stream's own steps, over a simulated network;
//	                    its steps and each replica's turn of the role loop
//	replicas_roles.go   promotion, demotion, a crash or power loss and its restart, a switchover
//	replicas_commit.go  a replica's group commit, the primary's commit index over the acknowledgements
//	replicas_stream.go  the stream message by message (hello, begin, catch-up, records, snapshots) and
//	                    the standby's copy over the simulated disk (simCopy)
//	replicas_net.go     the network: connections, messages in flight, their faults and stale replays
//	replicas_check.go   the checks after every step and at the end
//	replicas_state.go   the state check once logs are truncated behind snapshots
//	replicas_disk.go    a replica's disk and process there: its wal over the simulated directory, the
//	                    shell's host and executor, the segment files a rejoin cuts
//
// The checks, the faults and what the simulation cannot model are listed
// in docs/testing.md ("The deterministic simulator").
package sim
