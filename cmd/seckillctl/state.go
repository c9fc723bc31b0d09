package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/snapshot"
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
	Path    string `json:"path"`
	Index   uint64 `json:"index"`
	Bytes   int64  `json:"bytes"`
	Status  string `json:"status"`
	corrupt bool
}

// state is a SKU's state rebuilt from its data dir.
type state struct {
	skuDir    string
	log       *logData
	m         *sku.Machine
	base      string // the snapshot file the replay started from, "" for record 1
	baseIndex uint64
	index     uint64 // last record applied
	replayed  int
	snapshots []snapshotStatus
	problems  []string // corruption found on the way (verify)
}

// errNoBase: the log does not reach back to record 1 and no snapshot
// covers what it lacks.
var errNoBase = errors.New("no usable snapshot")

// loadState rebuilds the state of the SKU in skuDir: the newest usable
// snapshot (or, with verify, the oldest) plus the records after it, up to
// the limits of o. It only reads.
func loadState(skuDir string, o loadOptions) (*state, error) {
	log, err := readLog(walDirOf(skuDir))
	if err != nil {
		return nil, err
	}
	st := &state{skuDir: skuDir, log: log}
	first, last := log.info.FirstIndex, log.info.LastIndex
	until := last
	if o.untilIndex > 0 {
		if o.untilIndex > last {
			return nil, fmt.Errorf("--until-index %d: the log ends at record %d", o.untilIndex, last)
		}
		until = o.untilIndex
	}
	files, err := snapshot.List(filepath.Join(skuDir, "snapshots"))
	if err != nil {
		return nil, err
	}
	// Headers decide which files may start the replay.
	usable := make([]bool, len(files))
	for i, f := range files {
		s := snapshotStatus{Path: f.Path, Index: f.Index, Bytes: f.Size}
		h, err := snapshot.ReadHeader(f.Path)
		if err == nil && o.verify {
			h, err = checkFile(f.Path)
		}
		switch {
		case errors.Is(err, os.ErrNotExist):
			s.Status = "removed while reading (pruned by the engine)"
		case err != nil:
			s.Status, s.corrupt = corruptStatus(err), true
		case h.Index != f.Index:
			s.Status, s.corrupt = fmt.Sprintf("corrupt: the file holds index %d", h.Index), true
		case f.Index > last && o.verify && logEndsBefore(skuDir, f.Index):
			// Checked whole, and the log still ends before it: a snapshot
			// is written only once the log is durable up to its record.
			s.Status = fmt.Sprintf("beyond the log (which ends at %d): durable records are missing from the log", last)
			st.problems = append(st.problems, fmt.Sprintf("snapshot %s was taken at record %d, the log ends at %d: "+
				"durable records are missing from the log (seckilld refuses to start this SKU)", f.Path, f.Index, last))
		case f.Index > last:
			s.Status = fmt.Sprintf("beyond the log (which ends at %d)", last)
		case f.Index+1 < first:
			s.Status = fmt.Sprintf("older than the log (which starts at %d)", first)
		case f.Index > until || (o.untilTime != 0 && h.LastAt > o.untilTime):
			s.Status = "after the point in time asked for"
		default:
			s.Status, usable[i] = "usable", true
		}
		if s.corrupt {
			st.problems = append(st.problems, fmt.Sprintf("snapshot %s: %s", f.Path, s.Status))
		}
		st.snapshots = append(st.snapshots, s)
	}
	if !(o.verify && first == 1) { // verify replays from record 1 when the log has it
		st.pickBase(files, usable, o.verify)
	}
	if st.m == nil {
		if first > 1 {
			return nil, fmt.Errorf("%w: the log starts at record %d and no snapshot usable for records 1..%d is in %s",
				errNoBase, first, first-1, filepath.Join(skuDir, "snapshots"))
		}
		st.m = sku.New()
	}
	st.index = st.baseIndex
	err = log.scan(st.baseIndex+1, func(index uint64, typ byte, payload []byte) error {
		if index > until {
			return errStop
		}
		r, err := sku.DecodeRecord(sku.RecordType(typ), payload)
		if err != nil {
			return fmt.Errorf("record %d: %w", index, err)
		}
		if o.untilTime != 0 && r.At > o.untilTime {
			return errStop
		}
		if err := st.m.Apply(&r); err != nil {
			return fmt.Errorf("record %d: %w", index, err)
		}
		st.index, st.replayed = index, st.replayed+1
		if o.verify {
			st.compare(index)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// pickBase loads the snapshot the replay starts from: the newest usable
// one that reads back whole, or with oldestFirst the oldest. A file that
// does not is recorded as a problem and the next one tried.
func (st *state) pickBase(files []snapshot.File, usable []bool, oldestFirst bool) {
	for k := range files {
		i := len(files) - 1 - k
		if oldestFirst {
			i = k
		}
		if !usable[i] {
			continue
		}
		_, m, err := snapshot.Read(files[i].Path)
		if err != nil {
			st.snapshots[i].Status, st.snapshots[i].corrupt = corruptStatus(err), true
			st.problems = append(st.problems, fmt.Sprintf("snapshot %s: %s", files[i].Path, st.snapshots[i].Status))
			continue
		}
		st.m, st.base, st.baseIndex = m, files[i].Path, files[i].Index
		st.snapshots[i].Status = "base of the replay"
		return
	}
}

// compare checks the replayed state against every usable snapshot at index.
func (st *state) compare(index uint64) {
	for i := range st.snapshots {
		s := &st.snapshots[i]
		if s.Index != index || s.Status != "usable" {
			continue
		}
		_, m, err := snapshot.Read(s.Path)
		switch {
		case err != nil:
			s.Status, s.corrupt = corruptStatus(err), true
		case m.Hash() != st.m.Hash():
			s.Status, s.corrupt = "differs from the log's state at its index", true
		default:
			s.Status = "matches the log"
			continue
		}
		st.problems = append(st.problems, fmt.Sprintf("snapshot %s: %s", s.Path, s.Status))
	}
}

// checkFile verifies a snapshot file's header and checksum.
func checkFile(path string) (snapshot.Header, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return snapshot.Header{}, err
	}
	return snapshot.Check(b)
}

// logEndsBefore reads the log of skuDir again and reports whether it
// still ends before record index: a running engine may have appended up
// to a snapshot it wrote while the log was being read.
func logEndsBefore(skuDir string, index uint64) bool {
	log, err := readLog(walDirOf(skuDir))
	return err == nil && log.info.LastIndex < index
}

func hashHex(h [32]byte) string { return hex.EncodeToString(h[:]) }

// corruptStatus is the status of a snapshot file that does not read back.
func corruptStatus(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "snapshot: corrupt: "); i >= 0 {
		msg = msg[i+len("snapshot: corrupt: "):]
	}
	return "corrupt: " + msg
}
