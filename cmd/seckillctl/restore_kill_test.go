package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/internal/skudir"
	"github.com/seckill/seckill/wal"
)

// ctlChild starts seckillctl with args in a child process (the test
// binary, through TestMain), so that a test can kill it with SIGKILL.
func ctlChild(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childArgs+"="+string(raw))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd
}

// largeSKU is a data dir holding c1/s1 with 40,000 reservations, so that
// restoring it takes long enough (a snapshot of them, then the log
// copied) for a kill to land in the middle. It returns the SKU folder and
// its last record index.
func largeSKU(t *testing.T) (string, uint64) {
	t.Helper()
	dataDir := t.TempDir()
	e, err := actors.Open(actors.Config{DataDir: dataDir, Logger: quiet, Fsync: wal.FsyncNeverBenchmarkOnly,
		ExpiryInterval: time.Hour, SnapshotEvery: -1, SnapshotInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	now := time.Now().UnixMilli()
	if err := e.Define(ctx, sku.Definition{CampaignID: "c1", SKUID: "s1", StartAt: now - 1000, EndAt: now + 86_400_000,
		PaymentWindowMs: 3_600_000, SaleLimit: 100_000, ReleaseOnClose: true}); err != nil {
		t.Fatal(err)
	}
	for b := 0; b < 40; b++ {
		items := make([]actors.ReserveItem, actors.MaxBatchItems)
		for i := range items {
			n := b*len(items) + i
			items[i] = actors.ReserveItem{RequestID: fmt.Sprintf("req-%d", n), UserID: fmt.Sprintf("user-%d", n)}
		}
		results, err := e.ReserveBatch(ctx, "c1", "s1", items)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range results {
			if r.Err != nil || r.Result.Outcome != sku.OutcomeAccepted {
				t.Fatalf("reserve: %+v", r)
			}
		}
	}
	last := e.SKU("c1", "s1").WALStats().Records
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dataDir, "c1", "s1"), last
}

// TestRestoreKilledLeavesNoPartialSKU: a restore killed with SIGKILL at
// any point of its writing leaves no SKU folder, or a whole one: never a
// snapshot without the log behind it, nor a fork's log without the feed
// history that gives its events new ids (seckilld would serve either).
// What it leaves is no SKU to seckilld or seckillctl, and the next restore
// into the same data dir replaces it.
func TestRestoreKilledLeavesNoPartialSKU(t *testing.T) {
	src, last := largeSKU(t)
	until := strconv.FormatUint(last-1, 10) // a fork: the copy starts a feed history of its own
	// Each attempt kills the restore once it reached one of these points
	// of its writing, in the staging folder or the SKU folder.
	milestones := []string{"c1", "c1/s1*/snapshots/*", "c1/s1*/wal/*"}
	interrupted := 0
	leftover := "" // a data dir a killed restore left without the SKU folder
	for attempt := 0; attempt < 30 && interrupted < 6; attempt++ {
		to := filepath.Join(t.TempDir(), "to")
		cmd := ctlChild(t, "restore", "--from", src, "--to", to, "--until-index", until)
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		pattern := filepath.Join(to, milestones[attempt%len(milestones)])
		var err error
	wait:
		for {
			select {
			case err = <-exited:
				break wait
			default:
			}
			if m, _ := filepath.Glob(pattern); len(m) > 0 {
				_ = cmd.Process.Signal(syscall.SIGKILL)
				err = <-exited
				break
			}
			time.Sleep(100 * time.Microsecond)
		}
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signaled() {
			interrupted++
		} else if err != nil {
			t.Fatalf("attempt %d: restore: %v", attempt, err)
		}
		dir := filepath.Join(to, "c1", "s1")
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			if dirs, err := skudir.List(to); err == nil && len(dirs) != 0 {
				t.Fatalf("attempt %d: no SKU folder, yet the data dir lists %v", attempt, dirs)
			}
			leftover = to
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, feed.HistoryFile)); err != nil {
			t.Fatalf("attempt %d (milestone %s): the SKU folder is there without its feed history: %v", attempt, pattern, err)
		}
		if code, out, errOut := ctl(t, "verify", to); code != exitOK {
			t.Fatalf("attempt %d (milestone %s): the SKU folder left is not whole: verify exit %d\n%.600s\n%s", attempt, pattern, code, out, errOut)
		}
	}
	if interrupted == 0 {
		t.Fatal("every restore ended before it was killed: the SKU is too small to cut one")
	}
	if leftover == "" {
		t.Fatal("no killed restore left its data dir without the SKU folder")
	}
	// A restore into a data dir a killed one left succeeds whatever that
	// left, and leaves nothing beside the SKU folder.
	wantCode(t, exitOK, "restore", "--from", src, "--to", leftover, "--until-index", until)
	entries, err := os.ReadDir(filepath.Join(leftover, "c1"))
	if err != nil || len(entries) != 1 || entries[0].Name() != "s1" {
		t.Fatalf("after the restore %s/c1 holds %v (%v), want s1 alone", leftover, entries, err)
	}
	wantCode(t, exitOK, "verify", leftover)
}
