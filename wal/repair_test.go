package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

const damageRecords = 20

// damagedLog writes the test records 1..damageRecords in a fresh directory
// and returns it with the path and contents of its tail segment.
func damagedLog(t *testing.T, opts Options) (dir, tail string, data []byte) {
	t.Helper()
	dir = t.TempDir()
	writeLog(t, dir, damageRecords, opts)
	paths := segmentPaths(t, dir)
	tail = paths[len(paths)-1]
	data, err := os.ReadFile(tail)
	if err != nil {
		t.Fatal(err)
	}
	return dir, tail, data
}

// reopenRepaired opens dir, expects exactly the records 1..want, then
// appends one more and checks it survives another reopen.
func reopenRepaired(t *testing.T, dir string, want uint64, logger *captureLogger) {
	t.Helper()
	opts := Options{}
	if logger != nil {
		opts.Logger = logger.logger()
	}
	l := openLog(t, dir, opts)
	checkRecords(t, l, 1, want)
	appendRecords(t, l, want+1, want+1)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, Options{})
	checkRecords(t, l, 1, want+1)
	l.Close()
}

func TestCutFinalRecordAtEveryOffset(t *testing.T) {
	_, tail, data := damagedLog(t, Options{})
	offsets := entryOffsets(t, data)
	final := offsets[len(offsets)-1]
	for cut := final; cut < len(data); cut++ {
		dir := t.TempDir()
		path := segmentPath(dir, segmentName(1))
		if err := os.WriteFile(path, data[:cut], 0o640); err != nil {
			t.Fatal(err)
		}
		logger := &captureLogger{}
		reopenRepaired(t, dir, damageRecords-1, logger)
		if dropped := cut - final; dropped > 0 && !strings.Contains(logger.text(), fmt.Sprintf("bytes_dropped=%d", dropped)) {
			t.Fatalf("cut at %d: no warning for %d bytes dropped:\n%s", cut, dropped, logger.text())
		}
	}
	_ = tail
}

func TestZeroTail(t *testing.T) {
	for _, size := range []int{1, 7, 16, 17, 100, 4095, 4096} {
		_, tail, data := damagedLog(t, Options{})
		dir := t.TempDir()
		damaged := append(append([]byte(nil), data...), make([]byte, size)...)
		if err := os.WriteFile(segmentPath(dir, segmentName(1)), damaged, 0o640); err != nil {
			t.Fatal(err)
		}
		logger := &captureLogger{}
		reopenRepaired(t, dir, damageRecords, logger) // no phantom empty records
		if !strings.Contains(logger.text(), fmt.Sprintf("bytes_dropped=%d", size)) || !strings.Contains(logger.text(), "all zero") {
			t.Fatalf("%d zero bytes: warning:\n%s", size, logger.text())
		}
		_ = tail
	}
}

func TestRandomTail(t *testing.T) {
	_, _, data := damagedLog(t, Options{})
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 30; trial++ {
		garbage := make([]byte, 1+rng.IntN(4096))
		for i := range garbage {
			garbage[i] = byte(rng.Uint32())
		}
		dir := t.TempDir()
		damaged := append(append([]byte(nil), data...), garbage...)
		if err := os.WriteFile(segmentPath(dir, segmentName(1)), damaged, 0o640); err != nil {
			t.Fatal(err)
		}
		reopenRepaired(t, dir, damageRecords, nil)
	}
}

// A torn tail in a segment created by cycling: the new, last segment holds
// only garbage; the records of the older segments all remain.
func TestTornTailInNewestSegment(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentSize: 1000}
	writeLog(t, dir, damageRecords, opts)
	paths := segmentPaths(t, dir)
	if len(paths) < 2 {
		t.Fatalf("%d segments", len(paths))
	}
	f, err := os.OpenFile(paths[len(paths)-1], os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{0x50, 0x57, 0x53, 0x01, 0x02}) // a cut entry
	f.Close()
	l := openLog(t, dir, opts)
	checkRecords(t, l, 1, damageRecords)
	l.Close()
}

func TestFlippedByteInEarlierRecordIsCorrupt(t *testing.T) {
	_, _, data := damagedLog(t, Options{})
	offsets := entryOffsets(t, data)
	victim := 5 // record 6, with 14 valid records after it
	for pos := offsets[victim]; pos < offsets[victim+1]; pos++ {
		for _, mask := range []byte{0x01, 0xFF} {
			dir := t.TempDir()
			damaged := append([]byte(nil), data...)
			damaged[pos] ^= mask
			path := segmentPath(dir, segmentName(1))
			os.WriteFile(path, damaged, 0o640)
			l, err := Open(dir, Options{Logger: quietLogger()})
			if err == nil {
				l.Close()
				t.Fatalf("flip at %d (mask %#x): Open succeeded", pos, mask)
			}
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "index 6") {
				t.Fatalf("flip at %d: %v", pos, err)
			}
			if after, _ := os.ReadFile(path); len(after) != len(damaged) {
				t.Fatalf("flip at %d: Open changed the file", pos)
			}
		}
	}
}

// Garbage inserted between two valid records is corruption, not a torn tail.
func TestInsertedGarbageIsCorrupt(t *testing.T) {
	_, _, data := damagedLog(t, Options{})
	offsets := entryOffsets(t, data)
	for _, garbage := range [][]byte{{0}, make([]byte, 40), []byte("junk")} {
		dir := t.TempDir()
		damaged := append(append(append([]byte(nil), data[:offsets[10]]...), garbage...), data[offsets[10]:]...)
		os.WriteFile(segmentPath(dir, segmentName(1)), damaged, 0o640)
		if _, err := Open(dir, Options{Logger: quietLogger()}); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("garbage %q: %v", garbage, err)
		}
	}
}

// A valid frame at the wrong position (index mismatch) is corruption.
func TestFrameAtWrongIndexIsCorrupt(t *testing.T) {
	_, _, data := damagedLog(t, Options{})
	frame, _ := AppendFrame(nil, 1, 99, []byte("stray"))
	entry := binary.AppendUvarint(nil, uint64(len(frame)))
	entry = append(entry, frame...)
	dir := t.TempDir()
	os.WriteFile(segmentPath(dir, segmentName(1)), append(append([]byte(nil), data...), entry...), 0o640)
	if _, err := Open(dir, Options{Logger: quietLogger()}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "index 99") {
		t.Fatalf("stray frame: %v", err)
	}
}

func TestCorruptEarlierSegmentFailsReplay(t *testing.T) {
	opts := Options{SegmentSize: 1000}
	dir := t.TempDir()
	writeLog(t, dir, 100, opts)
	paths := segmentPaths(t, dir)
	if len(paths) < 4 {
		t.Fatalf("only %d segments", len(paths))
	}
	second, err := os.ReadFile(paths[1])
	if err != nil {
		t.Fatal(err)
	}
	firstIndexOfSecond := segmentFileIndex(t, dir, 1)

	damage := map[string][]byte{
		"flipped byte": func() []byte { b := append([]byte(nil), second...); b[len(b)/2] ^= 0x20; return b }(),
		"cut in half":  second[:len(second)/2],
		"emptied":      nil,
		"zeroed":       make([]byte, len(second)),
	}
	for name, contents := range damage {
		t.Run(name, func(t *testing.T) {
			copied := copyDir(t, dir)
			os.WriteFile(segmentPaths(t, copied)[1], contents, 0o640)
			l := openLog(t, copied, opts) // the tail is fine: Open succeeds
			defer l.Close()
			var last uint64
			err := l.Replay(0, func(index uint64, _ byte, _ []byte) error { last = index; return nil })
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Replay: %v", err)
			}
			if last >= firstIndexOfSecond+uint64(len(second))/minEntrySize || !strings.Contains(err.Error(), "record ") {
				t.Fatalf("Replay stopped after %d: %v", last, err)
			}
		})
	}
}

func segmentFileIndex(t *testing.T, dir string, i int) uint64 {
	files, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	return files[i].index
}

func TestScanSegment(t *testing.T) {
	var data []byte
	for i := uint64(5); i <= 7; i++ {
		frame, _ := AppendFrame(nil, 1, i, testPayload(i))
		data = binary.AppendUvarint(data, uint64(len(frame)))
		data = append(data, frame...)
	}
	size, last, err := ScanSegment(data, 5)
	if err != nil || size != len(data) || last != 7 {
		t.Fatalf("clean: %d %d %v", size, last, err)
	}
	if _, _, err := ScanSegment(data, 4); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("wrong first index: %v", err)
	}
	size, last, err = ScanSegment(nil, 5)
	if err != nil || size != 0 || last != 4 {
		t.Fatalf("empty: %d %d %v", size, last, err)
	}
	huge := binary.AppendUvarint(append([]byte(nil), data...), MaxFrameSize+1)
	size, last, err = ScanSegment(append(huge, make([]byte, 64)...), 5)
	if !errors.Is(err, ErrTornTail) || size != len(data) || last != 7 {
		t.Fatalf("oversized length: %d %d %v", size, last, err)
	}
}
