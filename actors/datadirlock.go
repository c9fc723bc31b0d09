package actors

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gofrs/flock"
)

// ErrDataDirLocked means another engine, in this process or another, holds
// the data dir's lock (or an offline tool is writing to it).
var ErrDataDirLocked = errors.New("data dir in use by another engine")

// ErrDataDirNested means the data dir is inside another engine's data dir,
// or holds one: the two engines would share files (the outer one reads the
// inner one's folders as campaigns, a restore or a backup of the outer one
// copies the inner one's logs in the middle of their writes).
var ErrDataDirNested = errors.New("data dirs nested")

// LockDataDir takes an exclusive flock(2) on the data dir dir itself (which
// must exist; github.com/gofrs/flock on the directory opened read-only)
// without waiting, and a shared one on every directory that encloses it
// (those it can open: a directory it may not read cannot be locked), and
// returns their release function. The engine holds them from Open to
// Close: two engines appending to the same logs would hand out the same
// tokens and overwrite each other's acknowledged records, and an engine
// whose data dir is inside another's shares its files too. The shared
// locks make the kernel refuse both nestings, whichever engine starts
// first: an engine on an enclosing directory cannot take its exclusive
// lock, and one on a directory inside cannot take its shared lock on a
// directory locked exclusively. Locking the directories, not a file in
// them, leaves nothing an operator could delete to break the fence; the
// kernel drops the locks when their process dies, so a kill -9 leaves
// nothing to clean up. It fences one machine (a local file system), like
// PostgreSQL's postmaster.pid or Pebble's LOCK file, not engines on other
// machines sharing a network file system. Offline tools that write into a
// data dir take it too, so that an engine cannot start on the dir while
// they write.
//
// dir is locked as its absolute path with symlinks resolved: a link to a
// data dir is that data dir. It fails with an error wrapping
// ErrDataDirLocked when the lock of dir is held elsewhere, with one
// wrapping ErrDataDirNested (naming both directories) when dir is inside
// or holds a locked data dir, and with the I/O error when dir cannot be
// resolved, opened or locked.
func LockDataDir(dir string) (release func() error, err error) {
	real, err := filepath.Abs(dir)
	if err == nil {
		real, err = filepath.EvalSymlinks(real)
	}
	if err != nil {
		return nil, fmt.Errorf("locking the data dir %s: %w", dir, err)
	}
	own := flock.New(real, flock.SetFlag(os.O_RDONLY))
	ok, err := own.TryLock()
	if err != nil {
		return nil, fmt.Errorf("locking the data dir %s: %w", dir, err)
	}
	if !ok {
		return nil, heldError(real)
	}
	held := []*flock.Flock{own}
	release = func() error {
		var errs []error
		for _, l := range held {
			errs = append(errs, l.Unlock())
		}
		return errors.Join(errs...)
	}
	for inner := real; filepath.Dir(inner) != inner; inner = filepath.Dir(inner) {
		outer := filepath.Dir(inner)
		l := flock.New(outer, flock.SetFlag(os.O_RDONLY))
		ok, err := l.TryRLock()
		switch {
		case err != nil:
			// Not readable (a home folder of mode 0711, say): not lockable
			// by this process, so not checked.
		case !ok:
			_ = release()
			return nil, fmt.Errorf("%w: %s is inside %s, the data dir of a running engine (a seckilld or a writing seckillctl); give each engine a directory of its own, neither inside the other",
				ErrDataDirNested, real, outer)
		default:
			held = append(held, l)
		}
	}
	return release, nil
}

// heldError says who holds dir's lock when LockDataDir could not take it:
// an exclusive holder is an engine on dir itself (ErrDataDirLocked);
// shared holders are engines on directories inside it (ErrDataDirNested,
// naming the first lockedBelow finds). The shared probe is taken and let
// go at once.
func heldError(dir string) error {
	probe := flock.New(dir, flock.SetFlag(os.O_RDONLY))
	if ok, err := probe.TryRLock(); err != nil || !ok {
		return fmt.Errorf("%w: %s is locked (a seckilld running on it?)", ErrDataDirLocked, dir)
	}
	_ = probe.Unlock()
	inner := lockedBelow(dir)
	if inner == "" {
		inner = "a directory inside it"
	}
	return fmt.Errorf("%w: %s holds %s, the data dir of a running engine (a seckilld or a writing seckillctl); give each engine a directory of its own, neither inside the other",
		ErrDataDirNested, dir, inner)
}
