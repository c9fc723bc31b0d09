package actors

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/gofrs/flock"
)

// LockFileName is the file of a data dir that the engine using it holds an
// exclusive flock(2) on (github.com/gofrs/flock), from Open to Close: two
// engines appending to the same logs would hand out the same tokens and
// overwrite each other's acknowledged records. The kernel drops the lock
// when its process dies, so a kill -9 leaves nothing to clean up. It is a
// fence for one machine (a local file system), like PostgreSQL's
// postmaster.pid or Pebble's LOCK file; it does not fence engines on
// other machines sharing a network file system.
const LockFileName = "LOCK"

// ErrDataDirLocked means another engine, in this process or another, holds
// the data dir's lock (or an offline tool is writing to it).
var ErrDataDirLocked = errors.New("data dir in use by another engine")

// LockDataDir takes the exclusive lock of the data dir dir (which must
// exist) without waiting, and returns its release function. It fails with
// an error wrapping ErrDataDirLocked when the lock is held elsewhere, and
// with the I/O error when the lock file cannot be opened or locked.
// Offline tools that write into a data dir take it too, so that an engine
// cannot start on the dir while they write.
func LockDataDir(dir string) (release func() error, err error) {
	path := filepath.Join(dir, LockFileName)
	l := flock.New(path)
	ok, err := l.TryLock()
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s is locked (a seckilld running on it?)", ErrDataDirLocked, path)
	}
	return l.Unlock, nil
}
