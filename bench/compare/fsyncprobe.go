package compare

import (
	"fmt"
	"os"
	"syscall"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Probe bounds: the probe stops at whichever comes first.
const (
	probeDuration = time.Second
	probeMaxSyncs = 20_000
	probeBlock    = 4096
)

// FsyncProbe is the disk's durable-append speed at the time of the run:
// 4 KiB appends, each followed by fdatasync. Every fsync-bound target's
// figures depend on it, and it drifts, so it is measured beside each run.
type FsyncProbe struct {
	// Syncs is the number of appends made durable.
	Syncs int `json:"syncs"`
	// PerSecond is Syncs per second.
	PerSecond float64 `json:"per_second"`
	// P50MS is the median latency of one append + fdatasync.
	P50MS float64 `json:"p50_ms"`
	// P99MS is its 99th percentile.
	P99MS float64 `json:"p99_ms"`
	// Filesystem is the type of the directory's filesystem.
	Filesystem string `json:"filesystem"`
}

// ProbeFsync appends and syncs in a temporary file under dir for about a second.
func ProbeFsync(dir string) (FsyncProbe, error) {
	file, err := os.CreateTemp(dir, "seckill-fsync-probe-")
	if err != nil {
		return FsyncProbe{}, err
	}
	defer os.Remove(file.Name())
	defer file.Close()
	block := make([]byte, probeBlock)
	histogram := hdrhistogram.New(1, 10_000_000, 3)
	start := time.Now()
	syncs := 0
	for syncs < probeMaxSyncs && time.Since(start) < probeDuration {
		began := time.Now()
		if _, err := file.Write(block); err != nil {
			return FsyncProbe{}, err
		}
		if err := syscall.Fdatasync(int(file.Fd())); err != nil {
			return FsyncProbe{}, err
		}
		_ = histogram.RecordValue(max(time.Since(began).Microseconds(), 1))
		syncs++
	}
	elapsed := time.Since(start)
	return FsyncProbe{
		Syncs:      syncs,
		PerSecond:  float64(syncs) / elapsed.Seconds(),
		P50MS:      float64(histogram.ValueAtQuantile(50)) / 1000,
		P99MS:      float64(histogram.ValueAtQuantile(99)) / 1000,
		Filesystem: filesystemType(dir),
	}, nil
}

// filesystemType names a directory's filesystem, to warn when fsync is a no-op.
func filesystemType(dir string) string {
	var stat syscall.Statfs_t
	if err := syscall.Statfs(dir, &stat); err != nil {
		return "unknown"
	}
	switch uint64(stat.Type) {
	case 0x01021994:
		return "tmpfs (fsync is a no-op: results are not durable!)"
	case 0xEF53:
		return "ext2/3/4"
	case 0x58465342:
		return "xfs"
	case 0x9123683E:
		return "btrfs"
	case 0x794C7630:
		return "overlayfs"
	}
	return fmt.Sprintf("0x%x", uint64(stat.Type))
}
