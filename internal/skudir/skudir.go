// Package skudir owns the layout of a data dir: each SKU has the folder
// <data-dir>/<campaign_id>/<sku_id>, which holds its write-ahead log in
// wal/ and its snapshots in snapshots/ (and, beside them, files other
// packages own: the feed's history chain). The engine, seckillctl's
// offline tools and a standby that creates SKU folders all find a SKU's
// files here.
package skudir

import (
	"os"
	"path/filepath"

	"github.com/seckill/seckill/actors/sku"
)

// The names of the folders inside a SKU's folder.
const (
	// WALName is the folder of the SKU's write-ahead log.
	WALName = "wal"
	// SnapshotsName is the folder of the SKU's snapshots.
	SnapshotsName = "snapshots"
)

// AtOnce bounds the SKUs one pass over many of them works on at once:
// the engine's recoveries at Open, the definitions of a list
// (actors.Engine.DefineAll), a promotion's epoch histories. Each SKU's
// work is a few fsyncs of its own files (and, replicated, a standby's
// acknowledgement), which the disk takes side by side where one after
// another they cost a round trip each; more at once only queue longer
// and hold more file descriptors.
const AtOnce = 16

// Dir is the folder of one SKU.
type Dir string

// Of is the folder of SKU skuID of campaignID in the data dir dataDir.
func Of(dataDir, campaignID, skuID string) Dir {
	return Dir(filepath.Join(Campaign(dataDir, campaignID), skuID))
}

// Campaign is the folder of campaignID's SKUs in the data dir dataDir.
func Campaign(dataDir, campaignID string) string {
	return filepath.Join(dataDir, campaignID)
}

// String is the folder's path.
func (d Dir) String() string { return string(d) }

// WAL is the folder of the SKU's write-ahead log.
func (d Dir) WAL() string { return filepath.Join(string(d), WALName) }

// Snapshots is the folder of the SKU's snapshots.
func (d Dir) Snapshots() string { return filepath.Join(string(d), SnapshotsName) }

// IDs are the campaign and SKU ids the folder's place names.
func (d Dir) IDs() (campaignID, skuID string) {
	return filepath.Base(filepath.Dir(string(d))), filepath.Base(string(d))
}

// HasWAL reports whether the folder holds a wal folder.
func (d Dir) HasWAL() bool { return isDir(d.WAL()) }

// HasSnapshots reports whether the folder holds a snapshots folder.
func (d Dir) HasSnapshots() bool { return isDir(d.Snapshots()) }

// List lists the SKU folders of a data dir: every <dataDir>/<campaign>/<sku>
// (valid ids) that holds a wal or a snapshots folder, in name order. A
// folder whose wal was lost but whose snapshots remain is listed: it is a
// SKU with a history, which recovery then refuses (its snapshots lie
// beyond its empty log) instead of forgetting it.
func List(dataDir string) ([]Dir, error) {
	campaigns, err := os.ReadDir(dataDir)
	if err != nil {
		return nil, err
	}
	var dirs []Dir
	for _, c := range campaigns {
		if !c.IsDir() || !sku.ValidID(c.Name()) {
			continue
		}
		skus, err := os.ReadDir(Campaign(dataDir, c.Name()))
		if err != nil {
			return nil, err
		}
		for _, s := range skus {
			if !s.IsDir() || !sku.ValidID(s.Name()) {
				continue
			}
			if d := Of(dataDir, c.Name(), s.Name()); d.HasWAL() || d.HasSnapshots() {
				dirs = append(dirs, d)
			}
		}
	}
	return dirs, nil
}

// FromPath is the SKU folder of path, a SKU folder or its wal folder: a
// folder named wal is a SKU's log, unless it holds a wal folder itself
// (then it is the folder of a SKU named "wal").
func FromPath(path string) Dir {
	path = filepath.Clean(path)
	if filepath.Base(path) == WALName && !Dir(path).HasWAL() {
		return Dir(filepath.Dir(path))
	}
	return Dir(path)
}

// LogOf is the log folder of path: the wal folder of a SKU folder, or
// path itself when it holds no wal folder (it is one).
func LogOf(path string) string {
	if d := Dir(path); d.HasWAL() {
		return d.WAL()
	}
	return path
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}
