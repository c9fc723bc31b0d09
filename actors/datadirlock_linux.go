package actors

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// lockedBelowMaxDirs bounds the directories lockedBelow looks at: it
// names a directory in an error message, and a data dir of 20,000 SKUs
// has some 60,000.
const lockedBelowMaxDirs = 200_000

// lockedBelow returns a directory inside dir that a process holds an
// exclusive flock on (an engine's data dir: LockDataDir), "" when it finds
// none. It reads the locks from /proc/locks (device and inode) and looks
// for them below dir, locking nothing itself: probing each directory with
// a lock would refuse, for that instant, an engine starting on it.
func lockedBelow(dir string) string {
	locked := exclusiveFlocks()
	if len(locked) == 0 {
		return ""
	}
	found, seen := "", 0
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil // unreadable: passed over
		}
		if seen++; seen > lockedBelowMaxDirs {
			return filepath.SkipAll
		}
		if path == dir {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && locked[inode{unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), st.Ino}] {
			found = path
			return filepath.SkipAll
		}
		return nil
	})
	return found
}

// inode is a file's device (major, minor) and inode number, as /proc/locks
// names a locked file.
type inode struct {
	major, minor uint32
	ino          uint64
}

// exclusiveFlocks reads the exclusive flock(2) locks held on this machine
// from /proc/locks: lines such as "1: FLOCK  ADVISORY  WRITE 4321 fe:00:9995458 0 EOF"
// (device numbers in hex); a waiter's line ("1: -> FLOCK ...") holds
// nothing. Nil when the file cannot be read.
func exclusiveFlocks() map[inode]bool {
	f, err := os.Open("/proc/locks")
	if err != nil {
		return nil
	}
	defer f.Close()
	out := map[inode]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" || fields[3] != "WRITE" {
			continue
		}
		parts := strings.Split(fields[5], ":")
		if len(parts) != 3 {
			continue
		}
		major, err1 := strconv.ParseUint(parts[0], 16, 32)
		minor, err2 := strconv.ParseUint(parts[1], 16, 32)
		ino, err3 := strconv.ParseUint(parts[2], 10, 64)
		if err1 == nil && err2 == nil && err3 == nil {
			out[inode{uint32(major), uint32(minor), ino}] = true
		}
	}
	return out
}
