package wal

import (
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
