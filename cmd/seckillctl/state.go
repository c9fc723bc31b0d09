package main

import (
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/skudir"
	"github.com/seckill/seckill/recovery"
	"github.com/seckill/seckill/snapshot"
	"github.com/seckill/seckill/wal"
)

// loadOptions say which state loadState builds.
type loadOptions struct {
	untilIndex uint64 // last record to apply; 0: the end of the log
	untilTime  int64  // Unix ms: apply records decided at or before it; 0: no limit
	// verify starts from the oldest usable base (record 1 if the log has
	// it) and compares every snapshot passed on the way with the replay.
	verify bool
}

// snapshotStatus is what loadState found out about one snapshot file.
type snapshotStatus struct {
	Path   string `json:"path"`
	Index  uint64 `json:"index"`
	Bytes  int64  `json:"bytes"`
	Status string `json:"status"`
}

// state is a SKU's state rebuilt from its data dir.
type state struct {
	skuDir    string
	log       *wal.Reader
	m         *sku.Machine
	base      string // the snapshot file the replay started from, "" for record 1
	index     uint64 // last record applied
	replayed  int
	snapshots []snapshotStatus
	problems  []string // corruption found on the way (verify)
}

// loadAttempts bounds the reads of one SKU while a running engine moves
// its files: a log that grew past a snapshot it wrote while the log was
// being read is not a short log.
const loadAttempts = 4

// loadState rebuilds the state of the SKU in skuDir with the one recovery
// rule (recovery.Plan): the newest usable snapshot (or, with verify, the
// oldest base) plus the records after it, up to the limits of o. It only
// reads.
func loadState(skuDir string, o loadOptions) (*state, error) {
	for attempt := 1; ; attempt++ {
		st, short, err := loadStateOnce(skuDir, o)
		// A snapshot beyond the log read a moment earlier is no proof when
		// the log has grown up to it since: the engine writes a snapshot
		// only once the log is durable up to its index.
		if short == nil || attempt == loadAttempts || !logReaches(skuDir, short.Snapshot.Index) {
			return st, err
		}
	}
}

// folderSKU returns the SKU a SKU folder's place names (<campaign>/<sku>),
// as seckilld reads it: its snapshots are of that SKU, and one of another
// SKU copied into its snapshots folder is passed over, never restored,
// exported or inspected in its stead. ok is false, and the ids empty (any
// snapshot is taken), for a folder whose name is no id (a copy renamed by
// hand).
func folderSKU(skuDir string) (campaignID, skuID string, ok bool) {
	c, s := skudir.Dir(skuDir).IDs()
	if !sku.ValidID(c) || !sku.ValidID(s) {
		return "", "", false
	}
	return c, s, true
}

// loadStateOnce is one attempt of loadState. short is the proof of a short
// log, if any: with verify it is among the problems of st, without it
// refuses (err).
func loadStateOnce(skuDir string, o loadOptions) (st *state, short *recovery.ShortLogError, err error) {
	log, err := readLog(skudir.LogOf(skuDir))
	if err != nil {
		return nil, nil, err
	}
	dir := skudir.Dir(skuDir)
	ro := recovery.Options{UntilIndex: o.untilIndex, UntilTime: o.untilTime, Verify: o.verify}
	ro.CampaignID, ro.SKUID, _ = folderSKU(skuDir)
	res, err := recovery.Plan(log, snapshot.Dir(dir.Snapshots()), ro)
	switch {
	case errors.As(err, &short):
		return nil, short, err
	case errors.Is(err, recovery.ErrNoBase):
		return nil, nil, fmt.Errorf("%w in %s", err, skudir.Dir(skuDir).Snapshots())
	case errors.Is(err, recovery.ErrOutOfRange):
		return nil, nil, fmt.Errorf("--until-index %d: the log ends at record %d", o.untilIndex, log.LastIndex())
	case errors.Is(err, wal.ErrCorrupt):
		return nil, nil, fmt.Errorf("%w: %w", errLogCorrupt, err)
	case err != nil:
		return nil, nil, err
	}
	st = &state{skuDir: skuDir, log: log, m: res.Machine, base: res.Base.Path,
		index: res.LastApplied, replayed: res.Replayed, problems: res.Problems}
	for _, s := range res.Snapshots {
		st.snapshots = append(st.snapshots, snapshotStatus{Path: s.Path, Index: s.Index, Bytes: s.Size, Status: s.Status})
	}
	return st, res.ShortLog, nil
}

// logReaches reads the log of skuDir again and reports whether it now
// reaches record index.
func logReaches(skuDir string, index uint64) bool {
	log, err := readLog(skudir.LogOf(skuDir))
	return err == nil && log.LastIndex() >= index
}

func hashHex(h [32]byte) string { return hex.EncodeToString(h[:]) }
