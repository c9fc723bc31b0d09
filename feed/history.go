package feed

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/seckill/seckill/wal"
)

// The histories of a SKU's log name the feed's cursors and event ids
// (KIP-320's leader epoch, applied to restores): a log's record indexes are
// unique only within a history. A SKU starts in its root history, derived
// from its reservation id key, so that old logs need nothing new.
// `seckillctl restore --until-*` starts a new history: the restored copy
// re-uses the indexes (and reservation ids) after the fork point for other
// sales, so a consumer's cursor from the abandoned history beyond that
// point must be refused (CURSOR_DIVERGED), never resumed.
//
// The histories live in the SKU folder, in HistoryFile (JSON, written to a
// temporary file, fsynced and renamed, the folder fsynced). Only seckillctl
// writes it, while no engine runs on the folder.

// HistoryFile is the histories file in a SKU folder.
const HistoryFile = "feed-history.json"

// historyIDBytes is the size of a history id (16 hex characters).
const historyIDBytes = 8

// Errors of Chain.Check.
var (
	// ErrDiverged: the cursor's history left the log's before the cursor's
	// index; the consumer resynchronises (export) from the fork index.
	ErrDiverged = errors.New("feed: cursor diverged")
	// ErrUnknownHistory: the history is none of this SKU's (another SKU's
	// cursor).
	ErrUnknownHistory = errors.New("feed: unknown history")
)

// Fork is a history that began after ForkIndex: records up to ForkIndex
// are those of the history before it, records after it its own.
type Fork struct {
	History   string `json:"history"`
	ForkIndex uint64 `json:"fork_index"`
}

// Chain is the history of every record of a SKU's log: the root history,
// then the forks, with increasing fork indexes. Abandoned lists the
// histories a later fork cut off, each with the index through which its
// records are still those of the chain (ForkIndex).
type Chain struct {
	Root      string `json:"root"`
	Forks     []Fork `json:"forks,omitempty"`
	Abandoned []Fork `json:"abandoned,omitempty"`
}

// RootHistory returns the root history of a SKU with reservation id key
// idKey.
func RootHistory(idKey [16]byte) string {
	sum := sha256.Sum256(append([]byte("seckill/history/v1\x00"), idKey[:]...))
	return hex.EncodeToString(sum[:historyIDBytes])
}

// LoadHistory reads the chain of the SKU folder dir; without the file, the
// chain is the root history alone.
func LoadHistory(dir string, idKey [16]byte) (Chain, error) {
	c := Chain{Root: RootHistory(idKey)}
	b, err := os.ReadFile(filepath.Join(dir, HistoryFile))
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return Chain{}, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return Chain{}, fmt.Errorf("feed: %s: %w", filepath.Join(dir, HistoryFile), err)
	}
	if c.Root != RootHistory(idKey) {
		return Chain{}, fmt.Errorf("feed: %s belongs to another SKU (root %s)", filepath.Join(dir, HistoryFile), c.Root)
	}
	return c, nil
}

// At returns the history of the record at index.
func (c Chain) At(index uint64) string {
	h := c.Root
	for _, f := range c.Forks {
		if f.ForkIndex < index {
			h = f.History
		}
	}
	return h
}

// Check decides a cursor: the consumer saw the records through index of
// history h. nil when they are the log's records too; ErrDiverged (with
// the fork index, the last record both share) when they are not;
// ErrUnknownHistory for a history this SKU never had.
func (c Chain) Check(h string, index uint64) (forkIndex uint64, err error) {
	histories := append([]Fork{{History: c.Root}}, c.Forks...)
	for i, f := range histories {
		if f.History != h {
			continue
		}
		if i+1 < len(histories) && index > histories[i+1].ForkIndex {
			return histories[i+1].ForkIndex, ErrDiverged
		}
		return 0, nil
	}
	for _, f := range c.Abandoned {
		if f.History == h {
			if index > f.ForkIndex {
				return f.ForkIndex, ErrDiverged
			}
			return 0, nil
		}
	}
	return 0, ErrUnknownHistory
}

// Fork returns the chain of a copy restored through forkIndex, in a new
// history drawn from rand: forks at or after forkIndex are abandoned.
func (c Chain) Fork(forkIndex uint64, rand io.Reader) (Chain, error) {
	var b [historyIDBytes]byte
	if _, err := io.ReadFull(rand, b[:]); err != nil {
		return Chain{}, fmt.Errorf("feed: drawing a history id: %w", err)
	}
	next := Chain{Root: c.Root, Abandoned: slices.Clone(c.Abandoned)}
	for _, f := range c.Forks {
		if f.ForkIndex < forkIndex {
			next.Forks = append(next.Forks, f)
			continue
		}
		next.Abandoned = append(next.Abandoned, Fork{History: f.History, ForkIndex: forkIndex})
	}
	next.Forks = append(next.Forks, Fork{History: hex.EncodeToString(b[:]), ForkIndex: forkIndex})
	return next, nil
}

// Write stores the chain in the SKU folder dir durably.
func (c Chain) Write(dir string) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := wal.WriteFile(dir, HistoryFile, append(b, '\n'), 0o640); err != nil {
		return fmt.Errorf("feed: %w", err)
	}
	return nil
}
