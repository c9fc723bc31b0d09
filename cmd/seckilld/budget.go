package main

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/httpapi"
)

// The open-files budget: one RLIMIT_NOFILE, split between the process, the
// SKUs and the connections, so that neither a new SKU nor accept(2) ever
// meets EMFILE. A SKU beyond its share is refused (actors.ErrTooManySKUs)
// and a connection beyond its share is answered 503 and closed.
const (
	// fdsPerSKU is what a SKU holds at rest: its log's tail segment
	// (package wal keeps no directory open).
	fdsPerSKU = 1
	// fdsProcess is the process's own: stdin, stdout, stderr, the data
	// dir's locks (its own and one per enclosing directory), the
	// listener, the netpoller's epoll and eventfd, the CPU profile, the
	// campaign file while it is read, the process collector's /proc reads
	// during a scrape, the one connection fasthttp accepts beyond
	// MaxConnections to answer 503 and close; the rest is margin for the
	// runtime and libraries.
	fdsProcess = 64
	// fdsPerFileOperation is what one of the engine's file operations in
	// progress (actors.FileOperationsMax: recoveries, snapshot writers, log
	// truncations, a SKU being created) holds beyond its SKU's: one at a
	// time (a segment or snapshot read, a temp file, a directory fsync);
	// two where tidwall/wal rewrites a segment while the tail is open.
	fdsPerFileOperation = 2
	// fdsReserved is what the budget keeps for the process and for the
	// engine's file operations.
	fdsReserved = fdsProcess + fdsPerFileOperation*actors.FileOperationsMax
	// connectionsMin is the fewest connections a budget must leave.
	connectionsMin = 64
	// connectionsMax is the most connections served whatever the limit.
	connectionsMax = 4 * httpapi.DefaultMaxConnections
)

// fdBudget is the split of the open-files limit.
type fdBudget struct {
	OpenFiles      int // the soft RLIMIT_NOFILE, after raising it to the hard one
	Reserved       int // fdsReserved
	MaxSKUs        int // SKUs the engine may hold, fdsPerSKU each
	MaxConnections int // connections served at once, one each
}

// errBudget: the open-files limit cannot hold the SKUs asked for plus
// connectionsMin connections.
var errBudget = errors.New("open-files limit too small")

// planBudget splits openFiles descriptors. maxSKUs 0 asks for the default:
// half of what the reserve leaves, at most actors.DefaultMaxSKUs, and at
// least connectionsMin connections; the connections get the rest, at most
// connectionsMax. A maxSKUs given must leave connectionsMin connections.
func planBudget(openFiles, maxSKUs int) (fdBudget, error) {
	b := fdBudget{OpenFiles: openFiles, Reserved: fdsReserved}
	free := openFiles - fdsReserved
	if maxSKUs == 0 {
		maxSKUs = min(actors.DefaultMaxSKUs, free/2/fdsPerSKU, (free-connectionsMin)/fdsPerSKU)
		if maxSKUs < 1 {
			return b, fmt.Errorf("%w: %d descriptors cannot hold %d reserved, 1 SKU and %d connections (raise it: ulimit -n, systemd LimitNOFILE=)",
				errBudget, openFiles, fdsReserved, connectionsMin)
		}
	}
	if most := (free - connectionsMin) / fdsPerSKU; maxSKUs > most {
		return b, fmt.Errorf("%w: --max-skus %d needs %d descriptors (%d per SKU) + %d reserved + %d connections at least, the open-files limit is %d: "+
			"raise it (ulimit -n, systemd LimitNOFILE=) or lower --max-skus (at most %d here)",
			errBudget, maxSKUs, maxSKUs*fdsPerSKU, fdsPerSKU, fdsReserved, connectionsMin, openFiles, max(most, 0))
	}
	b.MaxSKUs = maxSKUs
	b.MaxConnections = min(free-maxSKUs*fdsPerSKU, connectionsMax)
	return b, nil
}

// openFilesLimit raises the soft limit of open files to the hard one and
// returns it (bounded to 2^30).
func openFilesLimit() (int, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("reading the open-files limit: %w", err)
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err == nil {
			lim = raised
		}
	}
	return int(min(lim.Cur, 1<<30)), nil
}
