package wal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// readerRecords returns what r replays from index from.
func readerRecords(t testing.TB, r *Reader, from uint64) []record {
	t.Helper()
	var records []record
	err := r.Replay(from, func(index uint64, typ byte, payload []byte) error {
		records = append(records, record{index, typ, string(payload)})
		return nil
	})
	if err != nil {
		t.Fatalf("Reader.Replay(%d): %v", from, err)
	}
	return records
}

// checkReaderRecords asserts that r replays exactly the test records
// first..last from index from.
func checkReaderRecords(t testing.TB, r *Reader, from, first, last uint64) {
	t.Helper()
	records := readerRecords(t, r, from)
	if want := int(last + 1 - first); len(records) != want {
		t.Fatalf("replayed %d records from %d, want %d..%d", len(records), from, first, last)
	}
	for i, rec := range records {
		index := first + uint64(i)
		if rec.index != index || rec.typ != testType(index) || rec.payload != string(testPayload(index)) {
			t.Fatalf("record %d = %+v, want index %d", i, rec, index)
		}
	}
}

// snapshotFiles returns the name, size and contents of every file of dir.
func snapshotFiles(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	return files
}

func TestReaderRangeAndReplay(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, 300, Options{SegmentSize: 1000})
	r, err := OpenReader(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.FirstIndex() != 1 || r.LastIndex() != 300 || r.NextIndex() != 301 || r.Segments() != len(segmentPaths(t, dir)) || r.Segments() < 3 {
		t.Fatalf("range %d..%d, %d segments (%d files)", r.FirstIndex(), r.LastIndex(), r.Segments(), len(segmentPaths(t, dir)))
	}
	if n, why := r.TornTail(); n != 0 || why != "" {
		t.Fatalf("torn tail %d %q on a clean log", n, why)
	}
	checkReaderRecords(t, r, 0, 1, 300)
	checkReaderRecords(t, r, 123, 123, 300)
	if records := readerRecords(t, r, 301); len(records) != 0 {
		t.Fatalf("replay past the end: %d records", len(records))
	}
	// An error from fn stops the replay and is returned as is.
	stop := errors.New("stop")
	calls := 0
	err = r.Replay(1, func(uint64, byte, []byte) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Fatalf("Replay returned %v after %d calls", err, calls)
	}
}

func TestReaderOfEmptyDirectory(t *testing.T) {
	r, err := OpenReader(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if r.FirstIndex() != 0 || r.LastIndex() != 0 || r.NextIndex() != 1 || r.Segments() != 0 {
		t.Fatalf("empty dir: %d..%d next %d, %d segments", r.FirstIndex(), r.LastIndex(), r.NextIndex(), r.Segments())
	}
	if _, err := OpenReader(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing dir: %v", err)
	}
}

// A torn tail is reported with DecideTail's reason and left on disk: the
// reader writes nothing. Open then cuts exactly what the reader reported.
func TestReaderReportsTornTailWithoutWriting(t *testing.T) {
	dir, tail, data := damagedLog(t, Options{})
	offsets := entryOffsets(t, data)
	cut := offsets[len(offsets)-1] + 5 // inside the last entry
	if err := os.WriteFile(tail, data[:cut], 0o640); err != nil {
		t.Fatal(err)
	}
	before := snapshotFiles(t, dir)
	r, err := OpenReader(dir)
	if err != nil {
		t.Fatal(err)
	}
	n, why := r.TornTail()
	if r.LastIndex() != damageRecords-1 || n != 5 || !strings.Contains(why, "a cut entry") {
		t.Fatalf("last %d, torn tail %d bytes %q", r.LastIndex(), n, why)
	}
	checkReaderRecords(t, r, 1, 1, damageRecords-1)
	after := snapshotFiles(t, dir)
	if len(after) != len(before) {
		t.Fatalf("files changed: %d -> %d", len(before), len(after))
	}
	for name, b := range before {
		if !bytes.Equal(after[name], b) {
			t.Fatalf("the reader changed %s", name)
		}
	}
	reopenRepaired(t, dir, damageRecords-1, nil)
}

// Damage followed by a valid frame, and a cut segment that is not the
// newest, are corruption.
func TestReaderRefusesCorruption(t *testing.T) {
	dir, tail, data := damagedLog(t, Options{})
	offsets := entryOffsets(t, data)
	bad := bytes.Clone(data)
	bad[offsets[3]+FrameHeaderSize+2] ^= 0xff // a payload byte of record 4
	if err := os.WriteFile(tail, bad, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenReader(dir); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tail) {
		t.Fatalf("flipped byte mid-log: %v", err)
	}

	dir = t.TempDir()
	writeLog(t, dir, 300, Options{SegmentSize: 1000})
	paths := segmentPaths(t, dir)
	older, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(paths[0], older[:len(older)-3], 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenReader(dir); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "not the newest segment") {
		t.Fatalf("cut older segment: %v", err)
	}
	// A missing middle segment leaves a gap.
	dir = t.TempDir()
	writeLog(t, dir, 300, Options{SegmentSize: 1000})
	paths = segmentPaths(t, dir)
	if err := os.Remove(paths[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenReader(dir); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "previous segment ends at") {
		t.Fatalf("missing segment: %v", err)
	}
}

// A ".START" file is a truncation that a crash cut short: it replaces the
// segments before it, as tidwall/wal's Open would decide.
func TestReaderHonoursStartFile(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, 300, Options{SegmentSize: 1000})
	full, err := OpenReader(dir)
	if err != nil {
		t.Fatal(err)
	}
	// What tidwall writes first when truncating to 150: records 150.. of
	// the segment that holds 150, as <150>.START.
	tmp := filepath.Join(t.TempDir(), "wal")
	segs, err := Segments(dir)
	if err != nil {
		t.Fatal(err)
	}
	var holder int
	for i, s := range segs {
		if s.FirstIndex <= 150 {
			holder = i
		}
	}
	end := full.LastIndex()
	if holder+1 < len(segs) {
		end = segs[holder+1].FirstIndex - 1
	}
	if _, _, err := CopyRange(tmp, full, 150, end); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(tmp, segmentName(150)))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, segmentName(150)+startSuffix), b, 0o640); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReader(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.FirstIndex() != 150 || r.LastIndex() != 300 {
		t.Fatalf("with a START file: %d..%d, want 150..300", r.FirstIndex(), r.LastIndex())
	}
	checkReaderRecords(t, r, 0, 150, 300)
	// Open finishes the truncation and agrees.
	l := openLog(t, dir, Options{SegmentSize: 1000})
	defer l.Close()
	if l.FirstIndex() != 150 || l.LastIndex() != 300 {
		t.Fatalf("Open with a START file: %d..%d", l.FirstIndex(), l.LastIndex())
	}
}

// Beside a live log that appends and truncates, every Reader either sees a
// consistent range (contiguous, valid records) or gives up with
// os.ErrNotExist after its retries: never corruption.
func TestReaderBesideConcurrentTruncation(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{SegmentSize: 600})
	defer l.Close()
	appendRecords(t, l, 1, 50)
	if err := awaitDurable(t, l, 50); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for next := uint64(51); next <= 300; next += 10 {
			appendRecords(t, l, next, next+9)
			if err := awaitDurable(t, l, next+9); err != nil {
				t.Error(err)
				return
			}
			if _, err := l.TruncateBefore(next - 30); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	reads, retriedOut := 0, 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		r, err := OpenReader(dir)
		if errors.Is(err, os.ErrNotExist) {
			retriedOut++
			continue
		}
		if err != nil {
			t.Fatalf("reader beside a live log: %v", err)
		}
		reads++
		if r.FirstIndex() == 0 {
			continue
		}
		checkReaderRecords(t, r, 0, r.FirstIndex(), r.LastIndex())
	}
	wg.Wait()
	if reads == 0 {
		t.Fatalf("no read succeeded (%d gave up)", retriedOut)
	}
	if l.FirstIndex() <= 1 {
		t.Fatalf("the log was never truncated: first %d", l.FirstIndex())
	}
}
