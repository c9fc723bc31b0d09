package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// SyncDir fsyncs the directory at path, so that the entries created,
// renamed or removed in it survive a crash, and returns the error of the
// fsync or, failing that, of the close. It is the one directory fsync of
// the module: the log, snapshots, the engine's data dir and seckillctl's
// restore all call it.
func SyncDir(path string) error {
	dir, err := os.Open(path)
	if err != nil {
		return err
	}
	err = dir.Sync()
	if closeErr := dir.Close(); err == nil {
		err = closeErr
	}
	return err
}

// WriteFile replaces dir/name with b, durably: a temporary file beside it
// written and fsynced, renamed over it, the folder fsynced. A crash leaves
// the old file or the new one, never a torn one, and a nil error means the
// new one survives a crash. perm is the file's mode. It is the one such
// write of the module: small state files (an epoch's history, a cell's
// published grants, a pending definition, a feed's history chain) call it.
func WriteFile(dir, name string, b []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(dir, name+".*.tmp")
	if err != nil {
		return err
	}
	err = tmp.Chmod(perm)
	if err == nil {
		_, err = tmp.Write(b)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", filepath.Join(dir, name), err)
	}
	return SyncDir(dir)
}

// CreateDir creates dir and its missing parents, and, if syncFiles, fsyncs
// the parent of every directory it created so that the new entries survive
// a crash (a failed fsync wraps ErrSyncFailed). The new directory's own
// entries are the caller's to fsync once it has made them (SyncDir). The
// log's Open and a snapshot's Write make their folders with it.
func CreateDir(dir string, syncFiles bool) error {
	dir = filepath.Clean(dir)
	var missing []string // deepest first
	for path := dir; ; {
		if _, err := os.Stat(path); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		missing = append(missing, path)
		parent := filepath.Dir(path)
		if parent == path {
			break
		}
		path = parent
	}
	if len(missing) == 0 {
		return nil
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	if !syncFiles {
		return nil
	}
	for _, path := range missing {
		if err := SyncDir(filepath.Dir(path)); err != nil {
			return fmt.Errorf("%w: fsync %s after creating %s: %w", ErrSyncFailed, filepath.Dir(path), path, err)
		}
	}
	return nil
}
