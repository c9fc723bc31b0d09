package main

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/seckill/seckill/cmd/seckilld/seckilldtest"
	"github.com/seckill/seckill/internal/etcdtest"
)

// smallDisk mounts a tmpfs of size bytes in a temp dir of t (unmounted at
// the end of the test, after the cleanups registered later, such as a
// child's kill): a file system that fills up for real. It needs root, as
// CI runs the tests.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("a full disk needs root (mount -t tmpfs)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount -t tmpfs: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", dir, err, out)
		}
	})
	return dir
}

// fill writes a file in dir until the file system is full and returns
// its path (removing it frees the space).
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			return path
		}
	}
}

// TestReplicaSetStandbyDiskFull fills the standby's disk (its data dir on
// a small tmpfs). Its copy's log fails: it acknowledges nothing more.
// Without --sync-strict the primary drops it from the sync set (in etcd
// first) and sells on; with --sync-strict it keeps it and acknowledges
// nothing (504 RESULT_UNKNOWN). Once the space is freed the standby opens
// its copy again, catches up and is published again (strict: the
// waiting reserve commits); every reservation acknowledged is on the
// primary and both data dirs verify clean.
func TestReplicaSetStandbyDiskFull(t *testing.T) {
	t.Parallel()
	bin := seckilldtest.Build(t, raceEnabled)
	forSyncModes(t, func(t *testing.T, strict bool, extra []string) {
		etcd := etcdtest.Start(t)
		disk := smallDisk(t, "64m")
		p := startPairIn(t, bin, filepath.Join(t.TempDir(), "a"), filepath.Join(disk, "b"), etcd.Endpoint, etcd.Endpoint, extra...)

		if !strict {
			sale := startLoad(t, p.a.Base, "disk")
			filler := fill(t, disk)
			waitSync(t, p.a.Base) // b dropped, in etcd first
			waitLoad(t, &sale.progress, sale.progress.accepted.Load()+50)
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			waitSync(t, p.a.Base, "b")
			acked := sale.end()
			checkAcks(t, p.a.Base, acked)
			p.stopAndVerify(t, len(acked))
			t.Logf("%d acknowledged reservations; the standby's disk filled and freed under load", len(acked))
			return
		}
		filler := fill(t, disk)
		// The copy's last page may still take a few records: reserve
		// until one is not acknowledged.
		stuck := ""
		for i := 0; stuck == "" && i < 10000; i++ {
			id := fmt.Sprintf("disk-full-%d", i)
			code, body, err := post(p.a.Base+"/v1/campaigns/demo/skus/sku-1/reservations", map[string]string{"request_id": id, "user_id": "u-" + id})
			switch {
			case err == nil && code == http.StatusGatewayTimeout && body["error"] == "RESULT_UNKNOWN":
				stuck = id
			case err != nil || code != http.StatusAccepted:
				t.Fatalf("a reserve with the standby's disk full, strict: %d %v %v", code, body, err)
			}
		}
		if stuck == "" {
			t.Fatal("every reserve was acknowledged with the standby's disk full")
		}
		if st := adminReplica(t, p.a.Base); !slices.Equal(st.Sync, []string{"b"}) {
			t.Fatalf("strict: the sync set became %v", st.Sync)
		}
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		waitCommitted(t, p.a.Base, stuck, "the standby's disk was freed")
		p.stopAndVerify(t, 1)
	})
}
