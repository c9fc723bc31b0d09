// Package compare runs the same hot and seed scenarios of package bench
// against several ways to sell a flash-sale SKU, side by side, at several
// concurrencies, and prints one table per concurrency: throughput, p50/p99,
// ratio to seckilld, CPU seconds of server and client, and a correctness
// audit of each target's own state.
//
// Targets (one file each):
//
//   - redis.go: a private redis-server (appendonly yes, appendfsync always)
//     and a Lua reservation script (reserve.lua), called with EVALSHA.
//   - postgres.go: a private PostgreSQL cluster (synchronous_commit=on) and
//     one transaction per attempt: conditional UPDATE of the inventory row,
//     INSERT of the reservation under UNIQUE(campaign_id, user_id) and
//     UNIQUE(request_id), INSERT of the order.
//   - seckilld.go: ./bin/seckilld over HTTP with --fsync always.
//   - replicaset.go: "seckilld-rs", a replica set of two such seckillds
//     (a primary and its synchronous standby, each its own data dir) on
//     a private etcd, the load sent to the primary directly; its server
//     CPU is both replicas', shown per replica too, and its audit also
//     looks acknowledged reservations up on the standby. Not in the
//     default --targets: name it (--targets seckilld,seckilld-rs).
//   - engine.go, engine_actors.go: the engine (package actors) in process,
//     fsync on, with GOMAXPROCS as seckilld sets it; it also runs hot at
//     the --engine-concurrency levels, since its best concurrency lies
//     beyond what sockets hold.
//   - nullserver.go: a fasthttp server that answers 202 and does nothing:
//     the HTTP ceiling of the machine ("null-http"); as "null-fsync" it
//     first appends the request body to seckill's own write-ahead log
//     (package wal: group commit, fsync) and answers once it is durable:
//     the durable ceiling, the most a server that logs each request before
//     it answers can do here.
//
// passes.go is a comparison of its own ("seckill-bench compare passes",
// make bench-passes): one seckilld started with a random entry-pass key,
// reserves with and without entry passes in alternating rounds
// through the load tool's client, which mints the passes, and the medians
// of the pairs' ratios of throughput and server CPU per reserve.
//
// harness.go runs the cells and table.go prints them. The speed targets
// the tables are read against are docs/benchmarks.md's, not this package's.
//
// Every server listens on 127.0.0.1 only, lives in its own temporary
// directory, and is stopped (by its process id) when the run ends. A target
// whose program is missing is skipped with a line that says why.
package compare
