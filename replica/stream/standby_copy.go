package stream

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"

	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/internal/skudir"
	"github.com/seckill/seckill/replica"
	"github.com/seckill/seckill/snapshot"
	"github.com/seckill/seckill/wal"
)

// A standby's copy of one SKU log on its disk, as the stream's copy steps
// (copy.go) take it: the log cut at a rejoin, the epoch history written
// beside it, dropped for a base copy, its snapshots placed and removed.

// awaitDurable waits until log holds index durably.
func awaitDurable(log *wal.Log, index uint64) error {
	if index == 0 {
		return nil
	}
	done := make(chan error, 1)
	log.Await(index, wal.WaiterFunc(func(err error) { done <- err }))
	return <-done
}

// standbyCopy is a copy's SKU folder as BeginCopy, a base copy
// (BeginBase, FinishBase) and a new snapshot (InstallSnapshot) change it;
// the begin's feed history is written with the epoch history, and
// received is the file a snapshot was received into.
type standbyCopy struct {
	s           *Standby
	x           *standbySKU
	feedHistory []byte
	received    string
}

func (c standbyCopy) Log() *wal.Log { return c.x.log }

func (c standbyCopy) SKU() (campaignID, skuID string) { return c.x.key.campaignID, c.x.key.skuID }

func (c standbyCopy) Cut(index uint64) error { return c.s.cut(c.x, index) }

func (c standbyCopy) WriteHistory(h replica.History) error {
	if err := syncFile(c.x.dir, feed.HistoryFile, c.feedHistory); err != nil {
		return err
	}
	return WriteHistory(c.x.dir, h)
}

func (c standbyCopy) Drop() error { return c.s.dropCopy(c.x) }

func (c standbyCopy) Install(index uint64) error { return placeSnapshot(c.received, index) }

func (c standbyCopy) Snapshots() ([]uint64, error) {
	files, err := snapshot.ListOwn(skudir.Dir(c.x.dir).Snapshots(), c.x.key.campaignID, c.x.key.skuID)
	if err != nil {
		return nil, err
	}
	indexes := make([]uint64, len(files))
	for i, f := range files {
		indexes[i] = f.Index
	}
	return indexes, nil
}

func (c standbyCopy) RemoveSnapshots(indexes []uint64) error {
	return removeSnapshots(c.x.dir, func(i uint64) bool { return slices.Contains(indexes, i) })
}

func (c standbyCopy) AwaitDurable(index uint64) error { return awaitDurable(c.x.log, index) }

// Start writes an empty log that goes on at index+1 and opens it.
func (c standbyCopy) Start(index uint64) error {
	if _, _, err := wal.CopyRange(skudir.Dir(c.x.dir).WAL(), nil, 0, index); err != nil {
		return err
	}
	return c.s.reopen(c.x)
}

// placeSnapshot renames a snapshot received (written and fsynced) to its
// name, durably.
func placeSnapshot(path string, index uint64) error {
	if err := os.Rename(path, filepath.Join(filepath.Dir(path), snapshot.Name(index))); err != nil {
		return err
	}
	return wal.SyncDir(filepath.Dir(path))
}

// cut removes the records after index (never committed: the primary does
// not hold them) and the snapshots beyond them.
func (s *Standby) cut(x *standbySKU, index uint64) error {
	s.closeLog(x)
	removed, err := wal.CutAfter(skudir.Dir(x.dir).WAL(), index, s.logger.With("sku", x.key.String()))
	if err != nil {
		return err
	}
	s.metrics.cuts.Add(float64(removed))
	x.reads.cutAfter(index)
	if err := removeSnapshots(x.dir, func(i uint64) bool { return i > index }); err != nil {
		return err
	}
	return s.reopen(x)
}

// dropCopy removes a copy's log and snapshots before a base copy.
func (s *Standby) dropCopy(x *standbySKU) error {
	s.closeLog(x)
	x.reads.reset()
	if err := os.RemoveAll(skudir.Dir(x.dir).WAL()); err != nil {
		return err
	}
	if err := removeSnapshots(x.dir, func(uint64) bool { return true }); err != nil {
		return err
	}
	return wal.SyncDir(x.dir)
}

// removeSnapshots removes the snapshot files whose index drop selects.
func removeSnapshots(dir string, drop func(index uint64) bool) error {
	snaps := skudir.Dir(dir).Snapshots()
	files, err := snapshot.List(snaps)
	if err != nil {
		return err
	}
	removed := false
	for _, f := range files {
		if drop(f.Index) {
			if err := os.Remove(f.Path); err != nil {
				return err
			}
			removed = true
		}
	}
	if removed {
		return wal.SyncDir(snaps)
	}
	return nil
}

// syncFile makes dir/name hold b (absent when b is empty), durably.
func syncFile(dir, name string, b []byte) error {
	old, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	exists := err == nil
	switch {
	case len(b) == 0 && !exists:
		return nil
	case len(b) == 0:
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return err
		}
		return wal.SyncDir(dir)
	case exists && bytes.Equal(old, b):
		return nil
	}
	return writeFile(dir, name, b)
}
