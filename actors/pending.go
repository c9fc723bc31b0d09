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
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/wal"
)

// Pending definitions. A definition of many SKUs (a campaign PUT, a
// campaign file) is one Define per SKU, each durable in its own log: a
// crash between two would leave the campaign partly defined. MakeRoom,
// which such a definition calls before its first Define, first makes the
// whole list durable in a file of the data dir (pending-define-*), and its
// release removes it. A file found at start is a definition a crash cut
// short: FinishPending defines the rest before the engine serves, so that
// after a crash a multi-SKU definition is either not begun or whole. An
// error part-way (a full disk after some SKUs were defined) keeps the file
// the same way (MakeRoom's release), so that the next start makes that
// definition whole too, unless a later definition of the campaign, which
// the operator sends instead or to finish it, supersedes it.

const (
	// pendingPrefix names the pending files in the data dir (beside the
	// campaign folders, which skudir.List reads; a file is no campaign).
	pendingPrefix = "pending-define-"
	// pendingMagic opens a pending file.
	pendingMagic = "seckill pending definitions 1\n"
)

var pendingCRC = crc32.MakeTable(crc32.Castagnoli)

// pendingSeq makes the names of pending files written in one nanosecond
// distinct.
var pendingSeq atomic.Uint64

// writePending makes defs durable in a new pending file of the data dir
// (a temp file written, fsynced, renamed, the folder fsynced: it is
// whole or absent) and returns its path. Its layout (docs/formats.md):
//
//	pendingMagic
//	per definition: uvarint length, the payload of its DEFINE record
//	CRC-32C (Castagnoli) of all the above, 4 bytes big-endian
func (e *Engine) writePending(defs []sku.Definition) (string, error) {
	b := []byte(pendingMagic)
	for i := range defs {
		r := sku.Record{Type: sku.RecordDefine, Def: defs[i]}
		p := r.AppendPayload(nil)
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
	}
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, pendingCRC))
	name := fmt.Sprintf("%s%020d-%d", pendingPrefix, time.Now().UnixNano(), pendingSeq.Add(1))
	path := filepath.Join(e.cfg.DataDir, name)
	if err := wal.WriteFile(e.cfg.DataDir, name, b, 0o640); err != nil {
		os.Remove(path) // renamed, but its folder's fsync failed: the PUT fails, so no file may finish it
		return "", fmt.Errorf("recording the pending definitions: %w", err)
	}
	return path, nil
}

// removePending removes a pending file whose definitions are done (one
// already gone was finished by FinishPending since it was kept).
func (e *Engine) removePending(path string) {
	if err := os.Remove(path); errors.Is(err, os.ErrNotExist) {
		return
	} else if err != nil {
		e.cfg.Logger.Warn("a pending definitions file could not be removed; the next start defines its SKUs again (each as it is: nothing changes)", "file", path, "err", err)
		return
	}
	_ = wal.SyncDir(e.cfg.DataDir) // not durable: the next start repeats definitions already made, a no-op
}

// keepCut keeps the pending file path of defs, a definition an error cut
// short: the next start's FinishPending finishes it, unless a later
// definition of its campaigns supersedes it first (dropSuperseded).
func (e *Engine) keepCut(path string, defs []sku.Definition) {
	e.cutMu.Lock()
	defer e.cutMu.Unlock()
	if e.cut == nil {
		e.cut = make(map[string][]string)
	}
	e.cut[path] = campaignsOf(defs)
}

// PartlyDefined reports whether a definition naming campaignID was cut
// short by an error after it began and is still kept for the next start
// (keepCut): the campaign holds only the SKUs defined before the error,
// until a repeat of the definition or the next start finishes it. A
// definition a crash cut short needs no flag: the start finishes it
// before the engine serves.
func (e *Engine) PartlyDefined(campaignID string) bool {
	e.cutMu.Lock()
	defer e.cutMu.Unlock()
	for _, campaigns := range e.cut {
		if _, ok := slices.BinarySearch(campaigns, campaignID); ok {
			return true
		}
	}
	return false
}

// dropSuperseded removes the kept files of definitions cut short whose
// campaigns are all among those defs defined: the operator has stated
// those campaigns since, and a SKU that statement left out must not come
// back at the next start.
func (e *Engine) dropSuperseded(defs []sku.Definition) {
	e.cutMu.Lock()
	defer e.cutMu.Unlock()
	if len(e.cut) == 0 {
		return
	}
	stated := campaignsOf(defs)
	for path, campaigns := range e.cut {
		if allIn(campaigns, stated) {
			e.removePending(path)
			delete(e.cut, path)
		}
	}
}

// campaignsOf is the sorted, distinct campaigns of defs.
func campaignsOf(defs []sku.Definition) []string {
	var out []string
	for _, d := range defs {
		out = append(out, d.CampaignID)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// allIn reports whether every element of a is in the sorted b.
func allIn(a, b []string) bool {
	for _, x := range a {
		if _, ok := slices.BinarySearch(b, x); !ok {
			return false
		}
	}
	return true
}

// readPending reads the definitions of a pending file.
func readPending(path string) ([]sku.Definition, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) < len(pendingMagic)+4 || !bytes.HasPrefix(b, []byte(pendingMagic)) {
		return nil, errors.New("not a pending definitions file")
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

// DropPending removes the pending files of the data dir dataDir unread:
// a replica that follows a primary takes its SKUs from the primary's
// logs, and a definition its own crash cut short as primary must not be
// finished later over them (it defines nothing as a standby; promoted
// again, it would). It returns how many it removed.
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

// FinishPending completes the multi-SKU definitions a crash cut short
// (the pending files of the data dir, oldest first): each SKU is defined
// as the cut definition stated it (one already defined so is left as it
// is), and the file removed. It returns the SKUs it defined anew or
// changed. A definition the engine refuses (sku.ErrInvalidDefinition: it
// no longer applies) is logged and dropped; any other error (an I/O
// error, too many SKUs, ctx) keeps the file for a later call and is
// returned. Call it after Open, before serving.
func (e *Engine) FinishPending(ctx context.Context) (finished []string, err error) {
	entries, err := os.ReadDir(e.cfg.DataDir)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, ent := range entries {
		name := ent.Name()
		if ent.IsDir() || !strings.HasPrefix(name, pendingPrefix) {
			continue
		}
		path := filepath.Join(e.cfg.DataDir, name)
		if strings.HasSuffix(name, ".tmp") { // cut before its rename: no Define had begun
			os.Remove(path)
			continue
		}
		paths = append(paths, path)
	}
	sort.Strings(paths) // by the time they were written
	for _, path := range paths {
		defs, err := readPending(path)
		if err != nil {
			e.cfg.Logger.Error("a pending definitions file is damaged; its SKUs are left as they are (repeat the campaign's PUT)", "file", path, "err", err)
			e.removePending(path)
			continue
		}
		for _, d := range defs {
			before := e.SKU(d.CampaignID, d.SKUID)
			var had sku.Definition
			if before != nil {
				had = *before.Stats().Definition
			}
			if err := e.Define(ctx, d); errors.Is(err, sku.ErrInvalidDefinition) {
				e.cfg.Logger.Error("a definition a crash cut short no longer applies; the SKU is left as it is", "campaign_id", d.CampaignID, "sku_id", d.SKUID, "err", err)
				continue
			} else if err != nil {
				return finished, fmt.Errorf("finishing the definitions of %s: %s/%s: %w", filepath.Base(path), d.CampaignID, d.SKUID, err)
			}
			if before == nil || !d.Repeats(had) {
				finished = append(finished, d.CampaignID+"/"+d.SKUID)
			}
		}
		e.removePending(path)
	}
	return finished, nil
}
