package actors_test

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
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

// A data dir inside a running engine's data dir, or one that holds a
// running engine's data dir, would share its files: both are refused,
// whichever engine started first, naming both directories, and so is a
// link that resolves into a locked data dir. Data dirs side by side in
// one folder are not nested.
func TestDataDirNested(t *testing.T) {
	root := t.TempDir()
	outer := filepath.Join(root, "outer")
	inner := filepath.Join(outer, "campaign", "inner")
	side := filepath.Join(root, "side")
	for _, d := range []string{inner, side} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	cfg := func(dir string) actors.Config {
		return actors.Config{DataDir: dir, Fsync: wal.FsyncAlways, Logger: slog.New(slog.DiscardHandler)}
	}
	refused := func(what string, err error, names ...string) {
		t.Helper()
		if !errors.Is(err, actors.ErrDataDirNested) {
			t.Fatalf("%s: %v, want ErrDataDirNested", what, err)
		}
		for _, n := range names {
			if !strings.Contains(err.Error(), n) {
				t.Fatalf("%s: %q does not name %s", what, err, n)
			}
		}
	}

	openRefused := func(what, dir string, names ...string) {
		t.Helper()
		e, err := actors.Open(cfg(dir))
		if err == nil {
			e.Close()
		}
		refused(what, err, names...)
	}

	e, err := actors.Open(cfg(outer))
	if err != nil {
		t.Fatal(err)
	}
	_, err = actors.LockDataDir(inner)
	refused("a data dir inside a running engine's", err, inner, outer)
	openRefused("Open inside a running engine's data dir", inner, inner, outer)
	link := filepath.Join(root, "link")
	if err := os.Symlink(filepath.Join(outer, "campaign"), link); err != nil {
		t.Fatal(err)
	}
	_, err = actors.LockDataDir(filepath.Join(link, "inner"))
	refused("a link into a running engine's data dir", err, inner, outer)
	release, err := actors.LockDataDir(side)
	if err != nil {
		t.Fatalf("a data dir beside a running engine's: %v", err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	// The other way round: the engine inside starts first.
	e, err = actors.Open(cfg(inner))
	if err != nil {
		t.Fatalf("Open inside a data dir nobody runs on: %v", err)
	}
	_, err = actors.LockDataDir(outer)
	refused("a data dir holding a running engine's", err, outer, inner)
	openRefused("Open two levels above a running engine's data dir", root, root, inner)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	// Every lock was released: the outer one opens now.
	e, err = actors.Open(cfg(outer))
	if err != nil {
		t.Fatalf("Open after the inner engine closed: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}
