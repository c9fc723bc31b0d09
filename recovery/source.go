package recovery

import (
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/snapshot"
)

// Log is the log a recovery replays: *wal.Log and *wal.Reader satisfy it.
type Log interface {
	// FirstIndex returns the index of the oldest record held, 0 when the
	// log holds none.
	FirstIndex() uint64
	// LastIndex returns the index of the newest record, 0 for a log that
	// never held one. A log truncated past its last record holds none and
	// keeps its LastIndex (it continues at LastIndex+1).
	LastIndex() uint64
	// Replay calls fn in index order for every record with an index >=
	// from (and >= FirstIndex()) through LastIndex(), validating each
	// frame; an error from fn stops it and is returned as is.
	Replay(from uint64, fn func(index uint64, typ byte, payload []byte) error) error
}

// Snapshots is where a SKU's snapshots are kept: snapshot.Dir (files) and
// *snapshot.Memory satisfy it. A snapshot gone between List and a read
// gives an error wrapping os.ErrNotExist (pruned by a running engine).
type Snapshots interface {
	// List returns the snapshots, oldest (lowest index) first.
	List() ([]snapshot.File, error)
	// ReadHeader returns a snapshot's header, unverified: enough to judge
	// whether it can start a replay, not to trust it.
	ReadHeader(f snapshot.File) (snapshot.Header, error)
	// Check verifies a snapshot's header and whole checksum without
	// decoding its state.
	Check(f snapshot.File) (snapshot.Header, error)
	// Read verifies and decodes a whole snapshot.
	Read(f snapshot.File) (snapshot.Header, *sku.Machine, error)
}
