package main

import (
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/internal/skudir"
	"github.com/seckill/seckill/internal/timefmt"
	"github.com/seckill/seckill/snapshot"
	"github.com/seckill/seckill/wal"
)

// restoreJSON reports a restore.
type restoreJSON struct {
	SKUDir       string `json:"sku_dir"`
	CampaignID   string `json:"campaign_id"`
	SKUID        string `json:"sku_id"`
	Index        uint64 `json:"index"`
	LastRecordAt string `json:"last_record_at"`
	Reservations uint32 `json:"reservations"`
	Snapshot     string `json:"snapshot"`
	LogFirst     uint64 `json:"log_first_index"`
	LogLast      uint64 `json:"log_last_index"`
	StateHash    string `json:"state_hash"`
	// History is the event feed's history of the records after Index:
	// a new one after --until-* (a fork), else the source's.
	History string `json:"history"`
}

// runRestore builds, under the data dir --to, the directory of one SKU as
// it was at a record index or a time: a snapshot of that state, and the
// log's records up to it (for investigation; the engine replays none of
// them). seckilld started on --to serves the SKU from there, with record
// indexes continuing after it. From a lone snapshot file, the state is the
// file's. After a restore it warns on stderr that the copy is a fork of
// the source (forkWarning).
func runRestore(args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	from := fs.String("from", "", "a snapshot file, or a SKU directory (its snapshots and log)")
	to := fs.String("to", "", "the data dir to create the SKU in (the SKU must not exist there)")
	untilIndex := fs.Uint64("until-index", 0, "the last record to include (default: the end of the log)")
	untilTime := fs.String("until-time", "", "include records decided at or before this time (RFC 3339 or Unix ms)")
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	if err := required("restore", flagGiven{"--from", *from != ""}, flagGiven{"--to", *to != ""}); err != nil {
		return err
	}
	if *untilIndex != 0 && *untilTime != "" {
		return usageError("restore: give --until-index or --until-time, not both")
	}
	untilIndexSet := false
	fs.Visit(func(f *flag.Flag) { untilIndexSet = untilIndexSet || f.Name == "until-index" })
	if untilIndexSet && *untilIndex == 0 {
		return usageError("restore: --until-index must be at least 1 (records start at 1)")
	}
	var o loadOptions
	o.untilIndex = *untilIndex
	if *untilTime != "" {
		ms, err := parseTime(*untilTime)
		if err != nil {
			return usageError("--until-time: %v", err)
		}
		// Records carry their time in Unix ms, always after the epoch, and
		// 0 is "no limit" below: a point at or before the epoch is before
		// every record, never the whole log.
		if ms <= 0 {
			return fmt.Errorf("restore: --until-time %s is at or before 1970-01-01T00:00:00Z, before every record: nothing to restore", *untilTime)
		}
		o.untilTime = ms
	}
	st, err := os.Stat(*from)
	if err != nil {
		return err
	}
	var m *sku.Machine
	var index uint64
	var log *wal.Reader
	if st.IsDir() {
		s, err := loadState(skudir.FromPath(*from).String(), o)
		if err != nil {
			return err
		}
		m, index, log = s.m, s.index, s.log
	} else {
		var h snapshot.Header
		if h, m, err = snapshot.Read(*from); err != nil {
			return err
		}
		index = h.Index
		if (o.untilIndex != 0 && o.untilIndex != index) || (o.untilTime != 0 && h.LastAt > o.untilTime) {
			return usageError("restore: %s holds the state at record %d (%s); give its SKU directory to go to another point",
				*from, index, timefmt.OptionalMillis(h.LastAt))
		}
	}
	if !m.Defined() {
		return nothingToRestore(*from, o, log)
	}
	release, err := lockDataDir(*to)
	if err != nil {
		return err
	}
	defer func() {
		if rerr := release(); err == nil {
			err = rerr
		}
	}()
	d := m.Definition()
	dir := skudir.Of(*to, d.CampaignID, d.SKUID)
	if _, err := os.Stat(dir.String()); err == nil {
		return fmt.Errorf("restore: %s %w; restore into another data dir, or remove it first", dir, errExists)
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	campaignDir := skudir.Campaign(*to, d.CampaignID)
	_, statErr := os.Stat(campaignDir)
	// The SKU is written whole in a folder of its own beside its final
	// place, then renamed into it: a restore cut anywhere, by kill -9 too,
	// leaves no SKU folder, never one holding part of the SKU (a snapshot
	// without its log, or a log without the feed history a fork starts,
	// whose events would reuse the source's ids with other payloads).
	// What a killed restore left there is removed first: the data dir's
	// lock, held since, says no other restore is writing it.
	staging := restoreStaging(dir)
	if err := os.RemoveAll(staging.String()); err != nil {
		return err
	}
	defer func() {
		if err == nil {
			return
		}
		// A restore that failed part way (a full disk) removes what it
		// wrote, the SKU folder if the rename was made: the retry is not
		// refused as "already exists".
		_ = os.RemoveAll(staging.String())
		_ = os.RemoveAll(dir.String())
		if statErr != nil {
			_ = os.Remove(campaignDir) // only if it is empty: created here
		}
	}()
	info, err := snapshot.Write(staging.Snapshots(), m.Freeze(), index, snapshot.Options{})
	if err != nil {
		return err
	}
	first, last, err := wal.CopyRange(staging.WAL(), log, 1, index)
	if err != nil {
		return err
	}
	chain, err := restoredHistory(*from, st.IsDir(), d.IDKey, index, *untilIndex != 0 || *untilTime != "")
	if err != nil {
		return err
	}
	if err := chain.Write(staging.String()); err != nil {
		return err
	}
	if err := wal.SyncDir(staging.String()); err != nil {
		return err
	}
	if err := os.Rename(staging.String(), dir.String()); err != nil {
		return err
	}
	for _, p := range []string{campaignDir, *to} {
		if err := wal.SyncDir(p); err != nil {
			return err
		}
	}
	snapPath := filepath.Join(dir.Snapshots(), filepath.Base(info.Path))
	if err := writeJSON(stdout, restoreJSON{SKUDir: dir.String(), CampaignID: d.CampaignID, SKUID: d.SKUID, Index: index,
		LastRecordAt: timefmt.OptionalMillis(m.LastAt()), Reservations: m.Counts().Reservations, Snapshot: snapPath,
		LogFirst: first, LogLast: last, StateHash: hashHex(m.Hash()), History: chain.At(index + 1)}); err != nil {
		return err
	}
	_, err = fmt.Fprint(stderr, forkWarning(dir.String(), d.CampaignID, d.SKUID, index, m.Paused()))
	return err
}

// restoredHistory returns the history chain of a restored copy: the
// source's (from its SKU folder; for a snapshot file, the folder that
// holds its snapshots folder, if it has a chain), with a new history after
// index when the copy stops at an earlier point (--until-*): the copy
// re-uses the indexes after it for other records, and feed cursors of the
// source beyond it must answer CURSOR_DIVERGED.
func restoredHistory(from string, isDir bool, idKey [16]byte, index uint64, fork bool) (feed.Chain, error) {
	source := skudir.FromPath(from).String()
	if !isDir {
		source = filepath.Dir(filepath.Dir(from))
	}
	chain, err := feed.LoadHistory(source, idKey)
	if err != nil {
		return feed.Chain{}, err
	}
	if !fork {
		return chain, nil
	}
	return chain.Fork(index, rand.Reader)
}

// forkWarning tells the operator that a restored SKU is a fork of its
// source: the copy keeps the source's reservation id key (the restored
// state must be the source's, to the hash), so both would issue the same
// ids, and both selling is split-brain, as with a database backup started
// beside the database it came from.
func forkWarning(dir, campaignID, skuID string, index uint64, paused bool) string {
	w := fmt.Sprintf(`seckillctl: warning: %s is a fork of %s/%s as of record %d.
  It keeps the source's reservation id key, so it issues the same reservation ids as the
  source: it must not sell beside it. Stop the source for good (a move), or keep the copy paused.
`, dir, campaignID, skuID, index)
	if paused {
		return w + "  The copy is paused (the source was, at that point) and starts paused: do not resume it\n" +
			"  while the source sells.\n"
	}
	return w + fmt.Sprintf(`  The copy is not paused: when seckilld starts on it, pause it before buyers or the payment
  system can reach it (serve it on a private --addr first; B is its address, T its admin token):
    curl -X POST -H "Authorization: Bearer $T" $B/admin/campaigns/%s/skus/%s/pause
`, url.PathEscape(campaignID), url.PathEscape(skuID))
}

// nothingToRestore is the error of a point before the SKU's definition (or
// of a SKU never defined): a usage error, not a failed check.
func nothingToRestore(from string, o loadOptions, log *wal.Reader) error {
	point := "the end of the log"
	switch {
	case o.untilTime != 0:
		point = "--until-time " + timefmt.OptionalMillis(o.untilTime)
	case o.untilIndex != 0:
		point = fmt.Sprintf("--until-index %d", o.untilIndex)
	}
	first := ""
	if log != nil {
		_ = scan(log, 1, func(index uint64, typ byte, payload []byte) error {
			if r, err := sku.DecodeRecord(sku.RecordType(typ), payload); err == nil {
				first = fmt.Sprintf(" (its first record, %d, is at %s)", index, timefmt.OptionalMillis(r.At))
			}
			return errStop
		})
	}
	return fmt.Errorf("restore: %s holds no definition at %s%s: nothing to restore", from, point, first)
}

// restoreStaging is the folder a restore writes the SKU dir in before it
// renames it into place: beside it, named with a "~", which no id holds,
// so that no engine or tool reading the data dir takes it for a SKU
// (skudir.List lists valid ids only).
func restoreStaging(dir skudir.Dir) skudir.Dir {
	return skudir.Dir(dir.String() + "~restoring")
}

// errExists: restore does not overwrite a SKU directory.
var errExists = errors.New("already exists")
