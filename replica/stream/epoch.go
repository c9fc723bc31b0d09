package stream

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/seckill/seckill/internal/skudir"
	"github.com/seckill/seckill/replica"
	"github.com/seckill/seckill/wal"
	"golang.org/x/sync/errgroup"
)

// Files of a replica, beside the engine's SKU folders.
const (
	// EpochFile, in the data dir, holds the highest epoch the replica has
	// seen (decimal), fsynced before the replica acts on that epoch.
	EpochFile = "replica-epoch"
	// HistoryFile, in a SKU folder, holds its log's epoch history
	// (replica.History as JSON), fsynced.
	HistoryFile = "epochs"
)

// ReadEpoch returns the highest epoch the replica of dataDir has seen (0
// for a data dir that never replicated).
func ReadEpoch(dataDir string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, EpochFile))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	e, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stream: %s: %w", filepath.Join(dataDir, EpochFile), err)
	}
	return e, nil
}

// raiseEpoch makes e the highest epoch seen, durably. A lower epoch than
// the one on disk is refused: a replica never goes back.
func raiseEpoch(dataDir string, e uint64) error {
	cur, err := ReadEpoch(dataDir)
	if err != nil {
		return err
	}
	if StaleEpoch(cur, e) {
		return fmt.Errorf("%w: epoch %d, this replica has seen %d", ErrStaleEpoch, e, cur)
	}
	if e == cur {
		return nil
	}
	return writeFile(dataDir, EpochFile, []byte(strconv.FormatUint(e, 10)+"\n"))
}

// BeginEpoch is called by a replica that just acquired the leader key at
// epoch e, before its engine opens: it raises the data dir's epoch to e
// (ErrStaleEpoch if it has seen a higher one) and records in each SKU's
// epoch history that the records after the log's last are of epoch e.
// SKUs defined later start their history at (e, 1) (Primary does it as
// their log opens).
func BeginEpoch(dataDir string, e uint64, logger *slog.Logger) error {
	return beginEpoch(dataDir, e, logger, skudir.AtOnce)
}

// beginEpoch is BeginEpoch with at most workers SKUs at once.
func beginEpoch(dataDir string, e uint64, logger *slog.Logger, workers int) error {
	if logger == nil {
		logger = slog.Default()
	}
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return err
	}
	if err := raiseEpoch(dataDir, e); err != nil {
		return err
	}
	dirs, err := skudir.List(dataDir)
	if err != nil {
		return err
	}
	// Each SKU's history is its own file, fsynced with its folder: done
	// one after another they cost a promotion a few fsyncs per SKU, seconds
	// for hundreds of SKUs while the set serves nobody; the disk takes
	// them side by side.
	var g errgroup.Group
	g.SetLimit(workers)
	for _, dir := range dirs {
		g.Go(func() error {
			last, err := lastIndex(dir.WAL(), logger)
			if err != nil {
				return fmt.Errorf("stream: begin epoch %d in %s: %w", e, dir, err)
			}
			_, err = beginHistory(dir.String(), e, last)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	logger.Info("replica: epoch begun", "epoch", e, "skus", len(dirs))
	return nil
}

// lastIndex opens the log in dir (repairing a torn tail, as the engine
// would) and returns its last index; 0 when dir does not exist.
func lastIndex(dir string, logger *slog.Logger) (uint64, error) {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	l, err := wal.Open(dir, wal.Options{Logger: logger})
	if err != nil {
		return 0, err
	}
	last := l.LastIndex()
	return last, l.Close()
}

// beginHistory records in skuDir's history that the records after last
// are of epoch e, and returns the history. A history already in e is
// kept; entries beyond last (an epoch that began and wrote nothing here)
// go first. A log that has records but no history was written before
// replication: epoch 0.
func beginHistory(skuDir string, e, last uint64) (replica.History, error) {
	h, err := ReadHistory(skuDir)
	if err != nil {
		return nil, err
	}
	if n := len(h); n > 0 && h[n-1].Epoch == e {
		return h, nil
	}
	h = NextHistory(h, e, last)
	return h, WriteHistory(skuDir, h)
}

// ReadHistory returns the epoch history of a SKU folder (none without its
// file).
func ReadHistory(skuDir string) (replica.History, error) {
	b, err := os.ReadFile(filepath.Join(skuDir, HistoryFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var h replica.History
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("stream: %s: %w", filepath.Join(skuDir, HistoryFile), err)
	}
	if err := h.Check(); err != nil {
		return nil, fmt.Errorf("stream: %s: %w", filepath.Join(skuDir, HistoryFile), err)
	}
	return h, nil
}

// WriteHistory replaces the epoch history of a SKU folder, durably.
func WriteHistory(skuDir string, h replica.History) error {
	if err := h.Check(); err != nil {
		return err
	}
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	return writeFile(skuDir, HistoryFile, append(b, '\n'))
}

// writeFile replaces dir/name with b durably (wal.WriteFile).
func writeFile(dir, name string, b []byte) error {
	if err := wal.WriteFile(dir, name, b, 0o600); err != nil {
		return fmt.Errorf("stream: %w", err)
	}
	return nil
}
