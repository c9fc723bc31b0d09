package actors

import (
	"errors"
	"fmt"
	"os"

	"github.com/gofrs/flock"
)

// ErrDataDirLocked means another engine, in this process or another, holds
// the data dir's lock (or an offline tool is writing to it).
var ErrDataDirLocked = errors.New("data dir in use by another engine")

// LockDataDir takes an exclusive flock(2) on the data dir dir itself (which
// must exist; github.com/gofrs/flock on the directory opened read-only)
// without waiting, and returns its release function. The engine holds it
// from Open to Close: two engines appending to the same logs would hand out
// the same tokens and overwrite each other's acknowledged records. Locking
// the directory, not a file in it, leaves nothing an operator could delete
// to break the fence; the kernel drops the lock when its process dies, so a
// kill -9 leaves nothing to clean up. It fences one machine (a local file
// system), like PostgreSQL's postmaster.pid or Pebble's LOCK file, not
// engines on other machines sharing a network file system. Offline tools
// that write into a data dir take it too, so that an engine cannot start on
// the dir while they write. It fails with an error wrapping
// ErrDataDirLocked when the lock is held elsewhere, and with the I/O error
// when the directory cannot be opened or locked.
func LockDataDir(dir string) (release func() error, err error) {
	l := flock.New(dir, flock.SetFlag(os.O_RDONLY))
	ok, err := l.TryLock()
	if err != nil {
		return nil, fmt.Errorf("locking the data dir %s: %w", dir, err)
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s is locked (a seckilld running on it?)", ErrDataDirLocked, dir)
	}
	return l.Unlock, nil
}
