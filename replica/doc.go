// Package replica holds who leads a replica set, and who may lead next,
// as decided in etcd: PostgreSQL + Patroni's synchronous mode, with no
// consensus code of seckill's own.
//
// A replica set is one primary and its standbys, each a seckilld with its
// own copy of every SKU log. Two keys in the coordinator decide:
//
//	<prefix>/replicasets/<set>/leader   the primary's name, on its lease
//	<prefix>/replicasets/<set>/sync     {"primary", "sync", "epoch"}
//
// and each replica registers <prefix>/replicasets/<set>/members/<name>
// = {"http", "replication"} on its own lease (Coordinator.Register), so
// standbys, routers and seckillctl find the primary's addresses.
// The primary also keeps the campaign definitions of many SKUs it has
// begun under <prefix>/replicasets/<set>/pending/ (pending.go), for the
// next primary to finish, and each replica its record, its last role and
// epoch, under <prefix>/replicasets/<set>/seen/<name> on no lease
// (seen.go), so that a replica whose member key went with its lease is
// still known, as down.
//
// The sync key names the standbys that may be promoted (the sync set) and
// the epoch; only the primary changes it, in a transaction that compares
// its own leader key (Coordinator.SetSync), so a deposed primary's
// changes fail. The rules, each owned here:
//
//  1. The sync set is a subset of the standbys the primary waits for
//     before it acknowledges: a standby is published only once it holds
//     every committed record and is waited for; it is removed here first
//     and only then no longer waited for (the caller's order; SetSync is
//     the only way to publish).
//  2. A replica may take the free leader key only if the sync key names it,
//     as a member of the sync set or as the primary that published it
//     (MayLead), compared in the same transaction (Coordinator.Acquire).
//  3. With the sync set empty, only the primary that published it may lead
//     again: nobody else holds every acknowledged record.
//  4. Strict mode (the caller's): the primary never publishes an empty
//     sync set, but to give its last standby a base copy (rule 5);
//     without a standby it stops acknowledging.
//  5. A standby that needs a base copy (the records it needs were
//     truncated behind a snapshot) is removed from the sync set, and then
//     no longer waited for, before its base copy begins: the base copy
//     drops its copy first, and until its snapshot is installed it holds
//     none of the records it acknowledged (stream.MayBaseCopy holds the
//     copy, Follower.NeedsBase reports it, Node drops it).
//
// Every acquisition raises the epoch by one, in the same transaction. A
// replica refuses replication messages of a lower epoch than the highest
// it has seen, so a primary paused past its lease (it still believes it
// leads) can acknowledge nothing: its standby, promoted or refusing, never
// acks its records, and its SetSync fails its compare.
//
// Standbys (standbys.go) is rule 1 and 4 on the primary's side: whom to
// wait for, what to publish, and the commit index that follows (the least
// acknowledgement of the waited standbys; wal.Log.Confirm takes it). A
// rejoining replica keeps what its log shares with the primary's
// (Common, over each log's epoch history) and cuts the rest
// (wal.CutAfter).
//
// Primaries (primaries.go) follows the leader and member keys of every
// set for clients (seckill-router).
//
// Node (node.go) is the role loop of one replica, pure: it turns ticks,
// the coordinator's answers, its standbys' statuses and Lost into actions
// (acquire, promote, demote, publish, wait, follow) that a runner
// performs.
//
// A lease is liveness, not safety: it frees the leader key of a primary
// that stopped renewing it (TTL about 2 s), and Coordinator.Lost tells a
// primary it may no longer be the leader. Etcd is the production
// Coordinator (Etcd); Memory is its in-memory twin for tests and the
// simulator, linearizable, with leases that expire by the clock it is
// handed. The two pass one contract test (contract_test.go).
package replica
