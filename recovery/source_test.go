package recovery

import (
	"github.com/seckill/seckill/snapshot"
	"github.com/seckill/seckill/wal"
)

// The engine's log, the read-only reader and both snapshot stores are
// sources Plan takes as they are.
var (
	_ Log       = (*wal.Log)(nil)
	_ Log       = (*wal.Reader)(nil)
	_ Snapshots = snapshot.Dir("")
	_ Snapshots = (*snapshot.Memory)(nil)
)
