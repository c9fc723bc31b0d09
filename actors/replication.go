package actors

import "github.com/seckill/seckill/wal"

// Replication is what a replication layer (package replica/stream) needs
// of the engine: each SKU's log opened for it, and its truncation held
// back for the standbys. Config.Replication nil means an engine that
// replicates nothing: its logs are opened and truncated as without it.
//
// Its methods are called on the SKU's actor goroutine and must not block
// for long; the wal.Shipper it puts into the options is called on the
// log's flusher goroutine (wal.Options.Shipper).
type Replication interface {
	// LogOptions returns the options the SKU's log opens with: o, made
	// wal.Options.Replicated with the SKU's wal.Shipper.
	LogOptions(campaignID, skuID string, o wal.Options) wal.Options
	// Opened tells that the SKU's log, in its folder skuDir, is open
	// (at every recovery; a log opened again replaces the one before,
	// which is closed). It is called before the log's first Append; an
	// error fails the SKU's recovery (it is retried as any other).
	Opened(campaignID, skuID, skuDir string, log *wal.Log) error
	// RetainFrom returns the first record of the SKU's log the standbys
	// still need (0: none): a truncation keeps it and every record after.
	RetainFrom(campaignID, skuID string) uint64
	// SnapshotWritten tells that a snapshot of the SKU at index is durable
	// in its snapshots folder (on the snapshot's goroutine): the standbys
	// get it too.
	SnapshotWritten(campaignID, skuID string, index uint64)
}
