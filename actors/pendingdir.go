package actors

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/wal"
)

// dirPending is the PendingStore of a single node: one file per list in
// the data dir (pending-define-*), beside the campaign folders, which
// skudir.List reads (a file is no campaign). Its key is the file's name.
type dirPending struct {
	dir string
}

const (
	// pendingPrefix names the pending files in the data dir.
	pendingPrefix = "pending-define-"
	// pendingMagic opens a pending list.
	pendingMagic = "seckill pending definitions 1\n"
)

var pendingCRC = crc32.MakeTable(crc32.Castagnoli)

// pendingSeq makes the names of pending files written in one nanosecond
// distinct.
var pendingSeq atomic.Uint64

// Put writes defs in a new file (a temp file written, fsynced, renamed,
// the folder fsynced: it is whole or absent).
func (s dirPending) Put(defs []sku.Definition) (string, error) {
	name := fmt.Sprintf("%s%020d-%d", pendingPrefix, time.Now().UnixNano(), pendingSeq.Add(1))
	if err := wal.WriteFile(s.dir, name, EncodePending(defs), 0o640); err != nil {
		os.Remove(filepath.Join(s.dir, name)) // renamed, but its folder's fsync failed: the PUT fails, so no file may finish it
		// Nothing was defined: the definition may be sent again (503).
		return "", fmt.Errorf("%w: recording the pending definitions: %w", ErrUnavailable, err)
	}
	return name, nil
}

// Remove removes the file key (one already gone was finished since it
// was kept). The folder's fsync is not waited on for durability: a file
// that comes back at the next start repeats definitions already made, a
// no-op.
func (s dirPending) Remove(key string) error {
	if err := os.Remove(filepath.Join(s.dir, key)); errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	_ = wal.SyncDir(s.dir)
	return nil
}

// Finisher: the data dir's files are read by the next start.
func (dirPending) Finisher() Finisher { return FinishedAtStart }

// List reads the files, by the time they were written; a temp file (cut
// before its rename: no Define had begun) is removed.
func (s dirPending) List(context.Context) ([]PendingList, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, ent := range entries {
		name := ent.Name()
		if ent.IsDir() || !strings.HasPrefix(name, pendingPrefix) {
			continue
		}
		if strings.HasSuffix(name, ".tmp") {
			os.Remove(filepath.Join(s.dir, name))
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]PendingList, 0, len(names))
	for _, name := range names {
		l := PendingList{Key: name}
		b, err := os.ReadFile(filepath.Join(s.dir, name))
		if err == nil {
			l.Defs, err = DecodePending(b)
		}
		l.Err = err
		out = append(out, l)
	}
	return out, nil
}

// EncodePending is the layout of a pending list (docs/formats.md), in a
// file or elsewhere:
//
//	pendingMagic
//	per definition: uvarint length, the payload of its DEFINE record
//	CRC-32C (Castagnoli) of all the above, 4 bytes big-endian
func EncodePending(defs []sku.Definition) []byte {
	b := []byte(pendingMagic)
	for i := range defs {
		r := sku.Record{Type: sku.RecordDefine, Def: defs[i]}
		p := r.AppendPayload(nil)
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, pendingCRC))
}

// DecodePending reads the definitions of a pending list (EncodePending).
func DecodePending(b []byte) ([]sku.Definition, error) {
	if len(b) < len(pendingMagic)+4 || !bytes.HasPrefix(b, []byte(pendingMagic)) {
		return nil, errors.New("not a pending definitions list")
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, pendingCRC) != sum {
		return nil, errors.New("checksum mismatch")
	}
	var defs []sku.Definition
	for rest := body[len(pendingMagic):]; len(rest) > 0; {
		n, w := binary.Uvarint(rest)
		if w <= 0 || uint64(len(rest)-w) < n {
			return nil, errors.New("truncated definition")
		}
		r, err := sku.DecodeRecord(sku.RecordDefine, rest[w:w+int(n)])
		if err != nil {
			return nil, err
		}
		defs = append(defs, r.Def)
		rest = rest[w+int(n):]
	}
	return defs, nil
}

// DropPending removes the pending files of the data dir dataDir unread.
// A replica keeps its pending lists in the replica set's store, not in
// files; a file found in its data dir is one a single node's run of the
// same data dir left, whose SKUs, as a standby, the replica now takes
// from the primary's logs: finished later over them, it would define
// what the set never stated. It returns how many it removed.
func DropPending(dataDir string) (int, error) {
	paths, err := filepath.Glob(filepath.Join(dataDir, pendingPrefix+"*"))
	if err != nil {
		return 0, err
	}
	for _, p := range paths {
		if err := os.Remove(p); err != nil {
			return 0, err
		}
	}
	if len(paths) > 0 {
		return len(paths), wal.SyncDir(dataDir)
	}
	return 0, nil
}
