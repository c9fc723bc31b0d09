package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/seckill/seckill/wal"
)

// The log is read without opening it: wal.Open would repair a torn tail
// (write) and tidwall/wal takes the directory for itself. seckillctl reads
// the segment files (tidwall/wal's: named by their first index in 20
// digits, entries uvarint(len) + frame) and validates every frame with
// wal.ScanSegment, so it never changes a byte and can run beside the engine.

// logInfo describes a log as read.
type logInfo struct {
	Dir        string `json:"dir"`
	FirstIndex uint64 `json:"first_index"` // LastIndex+1 when it holds no record
	LastIndex  uint64 `json:"last_index"`
	Segments   int    `json:"segments"`
	// TornTailBytes are bytes after the last valid frame of the newest
	// segment: a write in progress, or a torn write the engine cuts at its
	// next start. They are not corruption.
	TornTailBytes int    `json:"torn_tail_bytes"`
	TornTail      string `json:"torn_tail,omitempty"`
}

// errLogCorrupt wraps damage in the log that is not a torn tail.
var errLogCorrupt = errors.New("log corrupt")

// logData is a log read into memory: every segment's valid bytes.
type logData struct {
	info logInfo
	segs []segmentData
}

type segmentData struct {
	first uint64
	data  []byte // the valid prefix
}

// readLog reads and validates every segment of the log in dir. A segment
// that disappears while it is read (the engine truncated the log) makes it
// start again, up to 3 times.
func readLog(dir string) (*logData, error) {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var l *logData
		if l, err = readLogOnce(dir); !errors.Is(err, os.ErrNotExist) {
			return l, err
		}
	}
	return nil, err
}

func readLogOnce(dir string) (*logData, error) {
	segs, err := wal.Segments(dir)
	if err != nil {
		return nil, err
	}
	if len(segs) == 0 {
		if filepath.Base(dir) != "wal" {
			if st, err := os.Stat(filepath.Join(dir, "snapshots")); err == nil && st.IsDir() {
				return nil, fmt.Errorf("%w: %s has snapshots but no wal folder: its log is lost "+
					"(seckilld answers UNAVAILABLE for it; seckillctl restore --from <its newest snapshot> rebuilds it up to that snapshot)",
					errLogCorrupt, dir)
			}
			return nil, fmt.Errorf("%s: no log segment files (is it a SKU's wal directory?)", dir)
		}
		// A SKU's wal directory before its first segment (seckilld stopped
		// between creating it and writing one): seckilld opens it as an
		// empty log, whose first record will be 1.
		return &logData{info: logInfo{Dir: dir, FirstIndex: 1}}, nil
	}
	l := &logData{info: logInfo{Dir: dir, FirstIndex: segs[0].FirstIndex, Segments: len(segs)}}
	expected := segs[0].FirstIndex
	for i, s := range segs {
		if s.FirstIndex != expected {
			return nil, fmt.Errorf("%w: %s starts at index %d, the previous segment ends at %d", errLogCorrupt, s.Path, s.FirstIndex, expected-1)
		}
		data, err := os.ReadFile(s.Path)
		if err != nil {
			return nil, err
		}
		valid, last, scanErr := wal.ScanSegment(data, s.FirstIndex)
		if scanErr != nil {
			if !errors.Is(scanErr, wal.ErrTornTail) || i != len(segs)-1 {
				return nil, fmt.Errorf("%w: %s: %v", errLogCorrupt, s.Path, scanErr)
			}
			l.info.TornTailBytes, l.info.TornTail = len(data)-valid, strings.TrimPrefix(scanErr.Error(), "wal: torn tail: ")
		}
		l.segs = append(l.segs, segmentData{first: s.FirstIndex, data: data[:valid]})
		expected = last + 1
	}
	l.info.LastIndex = expected - 1
	return l, nil
}

// errStop ends a scan early without an error.
var errStop = errors.New("stop")

// scan calls fn for every record with from <= index, in order, until fn
// returns an error (errStop ends it quietly).
func (l *logData) scan(from uint64, fn func(index uint64, typ byte, payload []byte) error) error {
	for _, s := range l.segs {
		index, data := s.first, s.data
		for pos := 0; pos < len(data); index++ {
			size, n := binary.Uvarint(data[pos:])
			frame := data[pos+n : pos+n+int(size)]
			pos += n + int(size)
			if index < from {
				continue
			}
			typ, _, payload, err := wal.DecodeFrame(frame) // validated by ScanSegment
			if err != nil {
				return fmt.Errorf("%w: record %d: %v", errLogCorrupt, index, err)
			}
			if err := fn(index, typ, payload); err != nil {
				if errors.Is(err, errStop) {
					return nil
				}
				return err
			}
		}
	}
	return nil
}

// entries returns the raw entries (uvarint length + frame) of records
// from..to, for copying into another log.
func (l *logData) entries(from, to uint64, fn func(index uint64, entry []byte) error) error {
	for _, s := range l.segs {
		index, data := s.first, s.data
		for pos := 0; pos < len(data) && index <= to; index++ {
			size, n := binary.Uvarint(data[pos:])
			entry := data[pos : pos+n+int(size)]
			pos += n + int(size)
			if index >= from {
				if err := fn(index, entry); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// walDirOf returns the log directory of a SKU dir, or dir itself when it is
// one (it holds segment files).
func walDirOf(dir string) string {
	if st, err := os.Stat(filepath.Join(dir, "wal")); err == nil && st.IsDir() {
		return filepath.Join(dir, "wal")
	}
	return dir
}

// skuDirOf returns the SKU dir of a SKU dir or of its wal dir: a directory
// named wal is a SKU's log, unless it holds a wal directory itself (then it
// is the directory of a SKU named "wal").
func skuDirOf(dir string) string {
	dir = filepath.Clean(dir)
	if filepath.Base(dir) == "wal" {
		if st, err := os.Stat(filepath.Join(dir, "wal")); err != nil || !st.IsDir() {
			return filepath.Dir(dir)
		}
	}
	return dir
}
