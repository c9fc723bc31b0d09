package main

import (
	"errors"
	"fmt"
	"os"

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
	if errors.Is(err, actors.ErrDataDirLocked) || errors.Is(err, actors.ErrDataDirNested) {
		return nil, fmt.Errorf("%w: stop seckilld before writing into its data dir (it reads a data dir's SKUs when it starts)", err)
	}
	return release, err
}

// lockSKUDir takes the lock of the SKU directory skuDir
// (<data-dir>/<campaign>/<sku>, or a copy anywhere) as if it were a data
// dir: refused while an engine runs on the data dir that holds it (it is
// inside that data dir: actors.ErrDataDirNested; ErrDataDirLocked while
// another seckillctl writes into the SKU), and an engine cannot start on
// that data dir meanwhile. A SKU copied outside any data dir takes a
// lock no engine holds, which costs nothing (the lock creates no file).
func lockSKUDir(skuDir string) (release func() error, err error) {
	release, err = actors.LockDataDir(skuDir)
	if errors.Is(err, actors.ErrDataDirLocked) || errors.Is(err, actors.ErrDataDirNested) {
		return nil, fmt.Errorf("%w: take the snapshot online (snapshot --server), or stop seckilld first", err)
	}
	return release, err
}
