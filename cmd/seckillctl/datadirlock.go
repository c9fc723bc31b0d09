package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/seckill/seckill/actors"
)

// The commands that write into a data dir take its lock (actors.LockDataDir)
// while they write, so that they never write beside a running seckilld and
// a seckilld cannot start on the dir meanwhile.

// lockDataDir creates the data dir dir if needed and takes its lock.
func lockDataDir(dir string) (release func() error, err error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	release, err = actors.LockDataDir(dir)
	if errors.Is(err, actors.ErrDataDirLocked) {
		return nil, fmt.Errorf("%w: stop seckilld before writing into its data dir (it reads a data dir's SKUs when it starts)", err)
	}
	return release, err
}

// lockEnclosingDataDir takes the lock of the data dir that holds the SKU
// directory skuDir (<data-dir>/<campaign>/<sku>, symlinks resolved). For a SKU copied outside
// any data dir it locks a directory no engine uses, which costs nothing
// (the lock creates no file).
func lockEnclosingDataDir(skuDir string) (release func() error, err error) {
	// Through symlinks to the real folder: a link to a live SKU must find
	// the data dir its engine locked.
	real, err := filepath.EvalSymlinks(skuDir)
	if err != nil {
		return nil, err
	}
	release, err = actors.LockDataDir(filepath.Dir(filepath.Dir(real)))
	if errors.Is(err, actors.ErrDataDirLocked) {
		return nil, fmt.Errorf("%w: take the snapshot online (snapshot --server), or stop seckilld first", err)
	}
	return release, err
}
