package snapshot

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/wal"
)

// File naming: <index in IndexDigits decimal digits><Suffix>.
const (
	// Suffix ends the name of every snapshot file.
	Suffix = ".snap"
	// IndexDigits is the width of the zero-padded index in a file name, so
	// that names sort by index.
	IndexDigits = 20
	// tempSuffix ends the name of a snapshot being written.
	tempSuffix = ".tmp"
	// writeBufferSize is the buffer between the encoder and the file.
	writeBufferSize = 1 << 20
)

// Name returns the file name of the snapshot at index.
func Name(index uint64) string {
	return fmt.Sprintf("%0*d%s", IndexDigits, index, Suffix)
}

// parseName returns the index a snapshot file name holds.
func parseName(name string) (uint64, bool) {
	digits, ok := strings.CutSuffix(name, Suffix)
	if !ok || len(digits) != IndexDigits {
		return 0, false
	}
	index, err := strconv.ParseUint(digits, 10, 64)
	return index, err == nil
}

// File is one snapshot file in a directory.
type File struct {
	Path  string
	Index uint64
	Size  int64 // bytes
}

// List returns the snapshot files of dir, oldest (lowest index) first; none
// when dir does not exist.
func List(dir string) ([]File, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var files []File
	for _, e := range entries {
		index, ok := parseName(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		files = append(files, File{Path: filepath.Join(dir, e.Name()), Index: index, Size: info.Size()})
	}
	sortFiles(files)
	return files, nil
}

// sortFiles sorts files by index, oldest first.
func sortFiles(files []File) {
	sort.Slice(files, func(i, j int) bool { return files[i].Index < files[j].Index })
}

// Options tune Write.
type Options struct {
	// NoSync skips the file and directory fsyncs (benchmarks of a log
	// opened with wal.FsyncNeverBenchmarkOnly; never for real data).
	NoSync bool
	// Now is the clock for created_at (default time.Now).
	Now func() time.Time
}

// Info describes a snapshot written by Write.
type Info struct {
	Header
	Path  string
	Bytes int64 // file size
}

// Write stores a snapshot of f at log index in dir (created if needed,
// durably: its parent fsynced): it writes <name>.<random>.tmp, fsyncs it, reads it back and checks its
// header and checksum, renames it to Name(index) (replacing a file of the
// same index) and fsyncs dir. On error the temp file is removed and no
// snapshot file has changed.
func Write(dir string, f *sku.Frozen, index uint64, o Options) (info Info, err error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	// The folder's entry, made by the first snapshot, is durable before the
	// log is truncated up to it (wal.CreateDir fsyncs the parent).
	if err := wal.CreateDir(dir, !o.NoSync); err != nil {
		return Info{}, fmt.Errorf("snapshot: create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, Name(index)+".*"+tempSuffix)
	if err != nil {
		return Info{}, err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	bw := bufio.NewWriterSize(tmp, writeBufferSize)
	h, n, err := Encode(bw, f, index, o.Now().UnixMilli())
	if err == nil {
		err = bw.Flush()
	}
	if err == nil && !o.NoSync {
		err = tmp.Sync()
	}
	if err != nil {
		return Info{}, fmt.Errorf("snapshot: write %s: %w", tmp.Name(), err)
	}
	if err = tmp.Close(); err != nil {
		return Info{}, err
	}
	if err = verifyFile(tmp.Name(), h, n); err != nil {
		return Info{}, err
	}
	path := filepath.Join(dir, Name(index))
	if err = os.Rename(tmp.Name(), path); err != nil {
		return Info{}, err
	}
	if !o.NoSync {
		if err := wal.SyncDir(dir); err != nil {
			return Info{}, fmt.Errorf("snapshot: fsync %s: %w", dir, err)
		}
	}
	return Info{Header: h, Path: path, Bytes: n}, nil
}

// verifyFile reads a file just written and checks its size, header and
// checksum (not the state: the encoder and decoder are tested to agree).
func verifyFile(path string, want Header, size int64) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	h, err := Check(b)
	if err == nil && (int64(len(b)) != size || h != want) {
		err = fmt.Errorf("%w: read back %d bytes, header %+v; wrote %d bytes, header %+v", ErrCorrupt, len(b), h, size, want)
	}
	if err != nil {
		return fmt.Errorf("snapshot: verify %s: %w", path, err)
	}
	return nil
}

// Read reads, verifies and decodes one snapshot file.
func Read(path string) (Header, *sku.Machine, error) {
	b, err := ReadBytes(path)
	if err != nil {
		return Header{}, nil, err
	}
	h, m, err := Decode(b)
	if err != nil {
		return h, nil, fmt.Errorf("%s: %w", path, err)
	}
	return h, m, nil
}

// ReadBytes returns the bytes of a snapshot file, unchecked but for its
// header: a file that is not a snapshot (a wrong path given to seckillctl,
// a device, a large dump) is refused by its first bytes (ErrCorrupt,
// ErrVersion) instead of being read whole into memory first.
func ReadBytes(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, FixedHeaderSize+2+2*sku.MaxIDLength)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, err := DecodeHeader(head[:n]); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var whole bytes.Buffer
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		whole.Grow(int(st.Size()) + bytes.MinRead) // one allocation, as os.ReadFile
	}
	whole.Write(head[:n])
	if _, err := whole.ReadFrom(f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return whole.Bytes(), nil
}

// ReadHeader reads the header of a snapshot file without reading or
// checking the rest (see DecodeHeader).
func ReadHeader(path string) (Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return Header{}, err
	}
	defer f.Close()
	b := make([]byte, FixedHeaderSize+2+2*sku.MaxIDLength)
	n, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return Header{}, fmt.Errorf("%s: %w", path, err)
	}
	h, err := DecodeHeader(b[:n])
	if err != nil {
		return h, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// ListOwn returns the snapshot files of dir that are SKU
// campaignID/skuID's own, oldest first: those whose header names that SKU
// at the index the file's name says. Another (a snapshot of another SKU
// copied in, a damaged header) is none of its own: recovery passes over
// it, so whoever keeps a SKU's newest snapshots and truncates its log up
// to the oldest kept (Prune on a primary, a standby's copy) counts and
// removes these only; keeping another instead of one of the SKU's own
// would leave the log truncated up to a snapshot nothing can start from.
func ListOwn(dir, campaignID, skuID string) ([]File, error) {
	listed, err := List(dir)
	if err != nil {
		return nil, err
	}
	var files []File
	for _, f := range listed {
		if h, err := ReadHeader(f.Path); err == nil && h.Index == f.Index && h.CampaignID == campaignID && h.SKUID == skuID {
			files = append(files, f)
		}
	}
	return files, nil
}

// Prune removes every snapshot file of dir but the keep newest (keep >= 1)
// of SKU campaignID/skuID's own (ListOwn: another file is neither counted
// nor removed) and fsyncs dir if it removed any. It returns the index of
// the oldest snapshot kept (0 when there is none) and the paths removed.
func Prune(dir, campaignID, skuID string, keep int, sync bool) (oldestKept uint64, removed []string, err error) {
	if keep < 1 {
		return 0, nil, fmt.Errorf("snapshot: keep %d, want at least 1", keep)
	}
	files, err := ListOwn(dir, campaignID, skuID)
	if err != nil {
		return 0, nil, err
	}
	if len(files) == 0 {
		return 0, nil, nil
	}
	cut := max(len(files)-keep, 0)
	for _, f := range files[:cut] {
		if err := os.Remove(f.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return 0, removed, err
		}
		removed = append(removed, f.Path)
	}
	if len(removed) > 0 && sync {
		if err := wal.SyncDir(dir); err != nil {
			return 0, removed, err
		}
	}
	return files[cut].Index, removed, nil
}

// RemoveTemp removes the temp files of interrupted writes from dir and
// returns their paths. Call it only when no Write is running on dir.
func RemoveTemp(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, tempSuffix) && strings.Contains(name, Suffix+".") {
			path := filepath.Join(dir, name)
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return removed, err
			}
			removed = append(removed, path)
		}
	}
	return removed, nil
}
