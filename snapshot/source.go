package snapshot

import (
	"fmt"
	"os"

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

// Memory is an in-memory source of snapshots (recovery.Snapshots): the
// bytes Marshal returns, by index, for tests and the simulator. Its File
// paths are "memory:" + Name(index). A file it does not hold gives an
// error wrapping os.ErrNotExist. It is not safe for concurrent use.
type Memory struct {
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
