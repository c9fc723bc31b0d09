package snapshot

import (
	"fmt"
	"os"
	"time"

	"github.com/seckill/seckill/actors/sku"
)

// Dir is the snapshot directory of one SKU (<sku-dir>/snapshots) as a
// source of snapshots for recovery (recovery.Snapshots). A missing
// directory holds none; a file removed between List and a read (pruned by
// a running engine) gives an error wrapping os.ErrNotExist.
type Dir string

// List returns the snapshot files, oldest (lowest index) first.
func (d Dir) List() ([]File, error) {
	files, err := List(string(d))
	if err != nil {
		return nil, fmt.Errorf("snapshot: list %s: %w", string(d), err)
	}
	return files, nil
}

// ReadHeader reads a file's header, unverified (see DecodeHeader).
func (d Dir) ReadHeader(f File) (Header, error) { return ReadHeader(f.Path) }

// Check verifies a file's header and checksum without decoding its state.
func (d Dir) Check(f File) (Header, error) {
	b, err := os.ReadFile(f.Path)
	if err != nil {
		return Header{}, err
	}
	h, err := Check(b)
	if err != nil {
		return h, fmt.Errorf("%s: %w", f.Path, err)
	}
	return h, nil
}

// Read reads, verifies and decodes a whole file.
func (d Dir) Read(f File) (Header, *sku.Machine, error) { return Read(f.Path) }

// Files is one SKU's snapshot folder as a store of snapshots: the
// reads of Dir, and the writes (Write, Prune, RemoveTemp) with Options.
// A running engine's SKU keeps its snapshots in one (package
// actors/shell).
type Files struct {
	Dir
	// CampaignID and SKUID name the SKU: Prune keeps and removes its
	// snapshots only.
	CampaignID, SKUID string
	Options           Options
}

// Write is Write in the folder.
func (f Files) Write(fr *sku.Frozen, index uint64) (Info, error) {
	return Write(string(f.Dir), fr, index, f.Options)
}

// Prune is Prune of the SKU's snapshots in the folder, fsyncing it unless
// Options.NoSync.
func (f Files) Prune(keep int) (oldestKept uint64, err error) {
	oldestKept, _, err = Prune(string(f.Dir), f.CampaignID, f.SKUID, keep, !f.Options.NoSync)
	return oldestKept, err
}

// RemoveTemp is RemoveTemp in the folder.
func (f Files) RemoveTemp() ([]string, error) { return RemoveTemp(string(f.Dir)) }

// String returns the folder's path.
func (f Files) String() string { return string(f.Dir) }

// Memory is an in-memory store of snapshots: the bytes Marshal returns,
// by index, for tests and the simulator. Its File paths are "memory:" +
// Name(index). A file it does not hold gives an error wrapping
// os.ErrNotExist. Nothing of it survives the process, so nothing is
// unfinished (RemoveTemp) and every write is durable once Write returns.
// It is not safe for concurrent use.
type Memory struct {
	// Now is the clock for created_at (nil: 0).
	Now   func() time.Time
	files map[uint64][]byte
}

// Put stores the bytes of a snapshot at index (replacing one of the same
// index). The bytes are kept, not copied: the caller does not modify them.
func (m *Memory) Put(index uint64, b []byte) {
	if m.files == nil {
		m.files = make(map[uint64][]byte)
	}
	m.files[index] = b
}

// Get returns the bytes stored at index.
func (m *Memory) Get(index uint64) ([]byte, bool) {
	b, ok := m.files[index]
	return b, ok
}

// Remove drops the snapshot at index, if any.
func (m *Memory) Remove(index uint64) { delete(m.files, index) }

// Write marshals f as the snapshot at index and stores it.
func (m *Memory) Write(f *sku.Frozen, index uint64) (Info, error) {
	var createdAt int64
	if m.Now != nil {
		createdAt = m.Now().UnixMilli()
	}
	b, h, err := Marshal(f, index, createdAt)
	if err != nil {
		return Info{}, err
	}
	m.Put(index, b)
	return Info{Header: h, Path: memoryPath(index), Bytes: int64(len(b))}, nil
}

// Prune drops every snapshot but the keep newest (keep >= 1) and returns
// the index of the oldest kept (0 when there is none).
func (m *Memory) Prune(keep int) (oldestKept uint64, err error) {
	if keep < 1 {
		return 0, fmt.Errorf("snapshot: keep %d, want at least 1", keep)
	}
	files, _ := m.List()
	if len(files) == 0 {
		return 0, nil
	}
	cut := max(len(files)-keep, 0)
	for _, f := range files[:cut] {
		m.Remove(f.Index)
	}
	return files[cut].Index, nil
}

// RemoveTemp removes nothing: a Memory holds no unfinished write.
func (m *Memory) RemoveTemp() ([]string, error) { return nil, nil }

// String names the store.
func (m *Memory) String() string { return "memory" }

// List returns the snapshots held, oldest first.
func (m *Memory) List() ([]File, error) {
	files := make([]File, 0, len(m.files))
	for index, b := range m.files {
		files = append(files, File{Path: memoryPath(index), Index: index, Size: int64(len(b))})
	}
	sortFiles(files)
	return files, nil
}

// ReadHeader decodes a snapshot's header, unverified (see DecodeHeader).
func (m *Memory) ReadHeader(f File) (Header, error) {
	b, err := m.bytes(f)
	if err != nil {
		return Header{}, err
	}
	return DecodeHeader(b)
}

// Check verifies a snapshot's header and checksum.
func (m *Memory) Check(f File) (Header, error) {
	b, err := m.bytes(f)
	if err != nil {
		return Header{}, err
	}
	return Check(b)
}

// Read verifies and decodes a whole snapshot.
func (m *Memory) Read(f File) (Header, *sku.Machine, error) {
	b, err := m.bytes(f)
	if err != nil {
		return Header{}, nil, err
	}
	return Decode(b)
}

func (m *Memory) bytes(f File) ([]byte, error) {
	b, ok := m.files[f.Index]
	if !ok || f.Path != memoryPath(f.Index) {
		return nil, fmt.Errorf("snapshot: %s: %w", f.Path, os.ErrNotExist)
	}
	return b, nil
}

func memoryPath(index uint64) string { return "memory:" + Name(index) }
