package wal

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Segment files are tidwall/wal's: named by the index of their first entry,
// in 20 decimal digits, each entry stored as uvarint(len(frame)) + frame.
// ".START" and ".END" files are tidwall's half-done truncations, which its
// Open finishes.
const (
	segmentNameDigits = 20
	startSuffix       = ".START"
	endSuffix         = ".END"

	// minEntrySize is the smallest valid entry on disk in bytes: a one-byte
	// length and an empty-payload frame.
	minEntrySize = 1 + FrameOverhead
)

// segmentFile is one file that tidwall/wal would load as a segment.
type segmentFile struct {
	name  string
	index uint64 // index of its first entry
	start bool   // a ".START" file
	end   bool   // an ".END" file
}

// segmentName returns the file name of the segment whose first entry is index.
func segmentName(index uint64) string {
	return fmt.Sprintf("%0*d", segmentNameDigits, index)
}

// listSegments returns the segment files of dir in name order, recognised by
// the same rule as tidwall/wal's load.
func listSegments(dir string) ([]segmentFile, error) {
	entries, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return nil, err
	}
	var files []segmentFile
	for _, entry := range entries {
		name := entry.Name()
		if entry.IsDir() || len(name) < segmentNameDigits {
			continue
		}
		index, err := strconv.ParseUint(name[:segmentNameDigits], 10, 64)
		if err != nil || index == 0 {
			continue
		}
		file := segmentFile{
			name:  name,
			index: index,
			start: len(name) == segmentNameDigits+len(startSuffix) && strings.HasSuffix(name, startSuffix),
			end:   len(name) == segmentNameDigits+len(endSuffix) && strings.HasSuffix(name, endSuffix),
		}
		if len(name) == segmentNameDigits || file.start || file.end {
			files = append(files, file)
		}
	}
	return files, nil
}

// Foreign reports whether dir holds files but no segment of a seckill log
// (no name of 20 digits): another program's folder (etcd's member/wal, in
// the folder `make cluster` makes) that sits where a SKU's log would, never
// a log to open, append to or pass as verified. files is how many entries
// dir holds. A missing or empty folder is not foreign: it is an empty log.
func Foreign(dir string) (files int, foreign bool) {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		return len(entries), false
	}
	segs, err := Segments(dir)
	return len(entries), err == nil && len(segs) == 0
}

// Segment is one segment file of a log directory. Reader and
// TruncateBefore list them; tests use them to damage a log on purpose.
type Segment struct {
	Path       string
	FirstIndex uint64 // index of its first entry
}

// Segments returns the segment files of a log directory that hold its
// records, in index order: files named by their first index in 20 digits.
// A ".START" file (a truncation cut short by a crash) replaces the
// segments before it, as Open would; ".END" files are left out.
func Segments(dir string) ([]Segment, error) {
	files, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	var segs []Segment
	for _, f := range files {
		switch {
		case f.start:
			segs = segs[:0] // what precedes a START file is already cut
		case f.end:
			continue
		}
		segs = append(segs, Segment{Path: segmentPath(dir, f.name), FirstIndex: f.index})
	}
	sort.SliceStable(segs, func(i, j int) bool { return segs[i].FirstIndex < segs[j].FirstIndex })
	return segs, nil
}

// tailSegment returns the segment that tidwall/wal will append to after its
// load: the first ".END" file if there is one (load deletes what follows),
// else the last file in name order.
func tailSegment(files []segmentFile) (segmentFile, bool) {
	if len(files) == 0 {
		return segmentFile{}, false
	}
	for _, file := range files {
		if file.end {
			return file, true
		}
	}
	return files[len(files)-1], true
}

// segmentPath joins dir and a file name.
func segmentPath(dir, name string) string { return filepath.Join(dir, name) }

// entryAt parses the entry starting at data[pos:], pos < len(data). It returns
// the frame, the offset of the next entry, and why the entry is invalid
// ("" when it is valid). It never reads past data and never trusts a length
// above MaxFrameSize.
func entryAt(data []byte, pos int) (frame []byte, next int, fault string) {
	size, n := binary.Uvarint(data[pos:])
	switch {
	case n == 0:
		return nil, pos, "length cut short"
	case n < 0:
		return nil, pos, "length overflows"
	case size == 0:
		return nil, pos, "empty entry"
	case size > MaxFrameSize:
		return nil, pos, "length above MaxFrameSize"
	case size > uint64(len(data)-pos-n):
		return nil, pos, "entry runs past end of file"
	}
	frame = data[pos+n : pos+n+int(size)]
	if f := checkFrame(frame); f != frameOK {
		return nil, pos, f.String()
	}
	return frame, pos + n + int(size), ""
}

// frameIndex returns the index field of a frame that passed checkFrame.
func frameIndex(frame []byte) uint64 {
	return binary.LittleEndian.Uint64(frame[frameIndexOffset:])
}

// ScanSegment validates the entries of a segment file's contents, data,
// whose first entry must have index firstIndex. It returns the size of the
// valid prefix in bytes and the index of its last entry (firstIndex-1 when
// the prefix is empty).
//
// err is nil when every byte is valid. It wraps ErrTornTail when the bytes
// after the valid prefix hold no valid frame with a larger index (a torn
// write, zeroes, garbage: the caller may cut the file at validSize). It wraps
// ErrCorrupt when a valid frame sits where another index was expected, or
// when a valid frame with a larger index follows the bad bytes (which would
// be lost by cutting). Messages give byte offsets and indexes. ScanSegment
// is safe on any input and takes time linear in len(data) except on input
// crafted to pass the magic and index checks at many offsets.
func ScanSegment(data []byte, firstIndex uint64) (validSize int, lastIndex uint64, err error) {
	pos, expected := 0, firstIndex
	for pos < len(data) {
		frame, next, fault := entryAt(data, pos)
		if fault != "" {
			return pos, expected - 1, badTail(data, pos, expected, fault)
		}
		if index := frameIndex(frame); index != expected {
			return pos, expected - 1, fmt.Errorf("%w: offset %d: valid frame holds index %d, expected %d",
				ErrCorrupt, pos, index, expected)
		}
		pos, expected = next, expected+1
	}
	return pos, expected - 1, nil
}

// badTail classifies the bytes from the first bad entry at pos to the end.
func badTail(data []byte, pos int, expected uint64, fault string) error {
	if offset, index, found := findLaterFrame(data, pos, expected); found {
		return fmt.Errorf("%w: offset %d (index %d): %s, but a valid frame with index %d follows at offset %d",
			ErrCorrupt, pos, expected, fault, index, offset)
	}
	kind := "garbage"
	if allZero(data[pos:]) {
		kind = "all zero"
	} else if fault == "entry runs past end of file" || fault == "length cut short" {
		kind = "a cut entry"
	}
	return fmt.Errorf("%w: offset %d (index %d): %s; the %d bytes to end of file are %s",
		ErrTornTail, pos, expected, fault, len(data)-pos, kind)
}

// findLaterFrame looks at every offset after the bad entry at bad for the
// start of a valid entry whose frame index is at least expected. Such an
// index cannot exceed expected plus the number of minimal entries that fit
// between bad and the offset: that bound and the magic skip the CRC at
// almost every offset, and exclude stray frames of other logs.
func findLaterFrame(data []byte, bad int, expected uint64) (offset int, index uint64, found bool) {
	for q := bad + 1; q+minEntrySize <= len(data); q++ {
		size, n := binary.Uvarint(data[q:])
		if n <= 0 || size < FrameOverhead || size > MaxFrameSize || size > uint64(len(data)-q-n) {
			continue
		}
		frame := data[q+n : q+n+int(size)]
		if binary.LittleEndian.Uint16(frame[frameMagicOffset:]) != FrameMagic || frame[frameVersionOffset] != FrameVersion {
			continue
		}
		index := frameIndex(frame)
		if index < expected || index-expected > uint64(q-bad)/minEntrySize {
			continue
		}
		if checkFrame(frame) == frameOK {
			return q, index, true
		}
	}
	return 0, 0, false
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
