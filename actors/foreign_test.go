package actors_test

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/wal"
)

// A data dir given by mistake that holds another program's data where a
// SKU's log would be (a folder holding an etcd data dir: etcd/member/wal)
// is refused by Open, which writes nothing there: adopting it as the SKU
// etcd/member would put a log segment among etcd's files.
func TestOpenRefusesAForeignDataDir(t *testing.T) {
	dir := t.TempDir()
	etcdWAL := filepath.Join(dir, "etcd", "member", "wal")
	if err := os.MkdirAll(etcdWAL, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(etcdWAL, "0000000000000000-0000000000000000.wal"), []byte("etcd's"), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := actors.Open(actors.Config{DataDir: dir, Fsync: wal.FsyncAlways, Logger: slog.New(slog.DiscardHandler)})
	if e != nil {
		e.Close()
	}
	if !errors.Is(err, actors.ErrForeignDataDir) {
		t.Fatalf("Open of a folder holding etcd's data: %v, want ErrForeignDataDir", err)
	}
	if entries, _ := os.ReadDir(etcdWAL); len(entries) != 1 {
		t.Fatalf("Open wrote into etcd's wal folder: %v", entries)
	}
	// An empty wal folder is a SKU created but never written (a crash
	// between the two): not foreign.
	if err := os.RemoveAll(filepath.Join(dir, "etcd")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "c1", "s1", "wal"), 0o750); err != nil {
		t.Fatal(err)
	}
	e, err = actors.Open(actors.Config{DataDir: dir, Fsync: wal.FsyncAlways, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("Open with an empty wal folder: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}
