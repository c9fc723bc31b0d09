package feed

import (
	"context"

	"github.com/seckill/seckill/actors/sku"
)

// Log is what the feed reads of one SKU's log: its durable records and
// where they start and end (NATS's consumers read a stream through
// StreamStore in the same way). *wal.Log is the log of a running SKU;
// MemLog is its in-memory twin for tests. The errors are wal's: reading
// below the first index fails with wal.ErrCompacted (a *wal.CompactedError
// naming the first index), a closed log with wal.ErrClosed, a failed one
// with wal.ErrFailed.
type Log interface {
	// FirstIndex returns the index of the oldest record the log holds
	// (records before it were removed after a snapshot), 0 when it holds
	// none.
	FirstIndex() uint64
	// DurableIndex returns the index of the last durable record; it never
	// decreases.
	DurableIndex() uint64
	// ReadDurable calls fn with up to maxRecords durable records from
	// index from on, in order, and returns the index after the last one
	// read (from when there was none). payload is valid during the call
	// only.
	ReadDurable(from uint64, maxRecords int, fn func(index uint64, typ byte, payload []byte) error) (next uint64, err error)
	// DurableAfter returns a channel closed once DurableIndex() is above
	// index (at once if it is), or the log fails or closes: readers at the
	// tail wait on it instead of polling.
	DurableAfter(index uint64) <-chan struct{}
	// Err returns the log's failure or wal.ErrClosed, nil while it is
	// healthy.
	Err() error
}

// Source is what the feed needs from the engine that runs the SKUs:
// *actors.Engine has it.
type Source interface {
	// Definition returns a SKU's durable definition; ok is false while
	// the engine does not know the SKU (also before its definition is
	// durable).
	Definition(campaignID, skuID string) (def sku.Definition, ok bool)
	// CampaignSKUs returns the ids of the campaign's known SKUs, sorted.
	CampaignSKUs(campaignID string) []string
	// FeedLog returns the SKU's open log and its folder (which holds its
	// HistoryFile). ok is false while the SKU has no open log
	// (recovering); a SKU that recovers opens a new log.
	FeedLog(campaignID, skuID string) (log Log, dir string, ok bool)
	// Reservations returns the views of the SKU's reservations with these
	// sequence numbers, in the order asked (a zero view where none
	// exists): the events of records after RESERVED carry their
	// reservation's immutable fields.
	Reservations(ctx context.Context, campaignID, skuID string, seqs []uint32) ([]sku.View, error)
	// DurableState rebuilds the SKU's state as of a durable index (asOf)
	// without disturbing the SKU: the export's source.
	DurableState(campaignID, skuID string) (m *sku.Machine, asOf uint64, err error)
}
