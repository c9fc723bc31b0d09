// Package compare runs the same hot and seed scenarios of package bench
// against several ways to sell a flash-sale SKU, side by side, at several
// concurrencies, and prints one table per concurrency: throughput, p50/p99,
// ratio to seckilld, CPU seconds of server and client, and a correctness
// audit of each target's own state.
//
// Targets (one file each):
//
//   - redis.go: a private redis-server (appendonly yes, appendfsync always)
//     and the design's Lua reservation script, called with EVALSHA.
//   - postgres.go: a private PostgreSQL cluster (synchronous_commit=on) and
//     the design's transaction: conditional UPDATE of the inventory row,
//     INSERT of the reservation under UNIQUE(campaign_id, user_id) and
//     UNIQUE(request_id), INSERT of the order.
//   - seckilld.go: ./bin/seckilld over HTTP with --fsync always.
//   - engine.go, engine_actors.go: the engine (package actors) in process,
//     fsync on, with GOMAXPROCS as seckilld sets it; it also runs hot at
//     the --engine-concurrency levels, since its best concurrency lies
//     beyond what sockets hold.
//   - nullserver.go: a fasthttp server that answers 202 and does nothing:
//     the HTTP ceiling of the machine ("null-http"); as "null-fsync" it
//     first appends the request to a file and waits for a group-commit
//     fdatasync (groupsync.go): the durable ceiling, the most any server
//     that syncs before it answers can do here.
//
// harness.go runs the cells, table.go prints them, and goals.go judges the
// issue's speed goals from ratios of figures of the same run, and prints
// the ceilings beside them.
//
// Every server listens on 127.0.0.1 only, lives in its own temporary
// directory, and is stopped (by its process id) when the run ends. A target
// whose program is missing is skipped with a line that says why.
package compare
