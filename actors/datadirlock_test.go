package actors_test

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/wal"
)

// Two engines on one data dir would hand out the same tokens and overwrite
// each other's records: the second Open is refused until the first closes,
// and an offline tool's lock keeps an engine out too.
func TestDataDirLock(t *testing.T) {
	dir := t.TempDir()
	cfg := actors.Config{DataDir: dir, Fsync: wal.FsyncAlways, Logger: slog.New(slog.DiscardHandler)}
	first, err := actors.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if e, err := actors.Open(cfg); !errors.Is(err, actors.ErrDataDirLocked) {
		if e != nil {
			e.Close()
		}
		t.Fatalf("second Open on a locked data dir: %v, want ErrDataDirLocked", err)
	}
	if _, err := actors.LockDataDir(dir); !errors.Is(err, actors.ErrDataDirLocked) {
		t.Fatalf("LockDataDir beside a running engine: %v", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	release, err := actors.LockDataDir(dir)
	if err != nil {
		t.Fatalf("LockDataDir after Close: %v", err)
	}
	if _, err := actors.Open(cfg); !errors.Is(err, actors.ErrDataDirLocked) {
		t.Fatalf("Open while a tool holds the lock: %v", err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	again, err := actors.Open(cfg)
	if err != nil {
		t.Fatalf("Open after the tool released the lock: %v", err)
	}
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
}
