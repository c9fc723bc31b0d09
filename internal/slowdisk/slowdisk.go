// Package slowdisk gives a test a disk it can slow down for real: an ext4
// file system on a loop device over a file, and a cgroup whose processes'
// writes to that device the kernel throttles to a number of write
// operations per second (cgroup v2's io.max, or cgroup v1's blkio
// throttle). A process placed in the cgroup then sees each fsync take
// about 1/IOPS seconds, as on a saturated or failing disk.
//
// It needs root, losetup, mkfs.ext4 and mount, and a kernel with loop
// devices and either controller: New fails the test, naming what is
// missing, when one is not there.
package slowdisk

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Disk is a mounted loop-device file system and the cgroup that throttles
// writes to it.
type Disk struct {
	// Dir is where the file system is mounted.
	Dir    string
	device string // /dev/loopN
	majMin string // "7:N"
	cgroup cgroup
}

// cgroup is the throttling cgroup, v1 or v2.
type cgroup struct {
	dir string
	v2  bool
}

// New makes a file system of size bytes on a new loop device, mounts it
// in a temp dir of t and makes a cgroup that will throttle writes to it.
// Everything is undone at the end of the test (after the cleanups
// registered later, such as a child process's kill, have run).
func New(t testing.TB, size int64) *Disk {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("slowdisk: needs root (loop devices, mount, cgroups)")
	}
	for _, tool := range []string{"losetup", "mkfs.ext4", "mount", "umount"} {
		if _, err := lookTool(tool); err != nil {
			t.Fatalf("slowdisk: %s not found (Debian: losetup, mount and umount are in util-linux/mount, mkfs.ext4 in e2fsprogs): %v", tool, err)
		}
	}
	cg, err := findCgroup()
	if err != nil {
		t.Fatalf("slowdisk: no cgroup can throttle a device here: %v", err)
	}
	tmp := t.TempDir()
	image := filepath.Join(tmp, "disk.img")
	if err := os.WriteFile(image, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(image, size); err != nil {
		t.Fatal(err)
	}
	d := &Disk{Dir: filepath.Join(tmp, "mnt")}
	if err := os.Mkdir(d.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := attachLoop(image)
	if err != nil {
		t.Fatalf("slowdisk: losetup: %v (does this kernel have loop devices? /dev/loop-control: %s)", err, statOf("/dev/loop-control"))
	}
	d.device = out
	t.Cleanup(func() {
		if out, err := run("losetup", "-d", d.device); err != nil {
			t.Errorf("slowdisk: losetup -d %s: %v: %s", d.device, err, out)
		}
	})
	var st unix.Stat_t
	if err := unix.Stat(d.device, &st); err != nil {
		t.Fatal(err)
	}
	d.majMin = fmt.Sprintf("%d:%d", unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev)))
	if out, err := run("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", d.device); err != nil {
		t.Fatalf("slowdisk: mkfs.ext4 %s: %v: %s", d.device, err, out)
	}
	if out, err := run("mount", d.device, d.Dir); err != nil {
		t.Fatalf("slowdisk: mount %s: %v: %s", d.device, err, out)
	}
	t.Cleanup(func() { d.unmount(t) })
	cg.dir = filepath.Join(cg.dir, fmt.Sprintf("seckill-slowdisk-%d-%s", os.Getpid(), filepath.Base(d.device)))
	if err := os.Mkdir(cg.dir, 0o755); err != nil {
		t.Fatalf("slowdisk: make the cgroup: %v", err)
	}
	d.cgroup = cg
	t.Cleanup(func() { d.removeCgroup(t) })
	return d
}

// Add moves process pid (all its threads) into the throttling cgroup.
func (d *Disk) Add(pid int) error {
	return os.WriteFile(filepath.Join(d.cgroup.dir, "cgroup.procs"), []byte(fmt.Sprint(pid)), 0)
}

// Throttle limits the cgroup's writes to the device to iops per second.
func (d *Disk) Throttle(iops int) error {
	if d.cgroup.v2 {
		return d.write("io.max", fmt.Sprintf("%s wiops=%d", d.majMin, iops))
	}
	return d.write("blkio.throttle.write_iops_device", fmt.Sprintf("%s %d", d.majMin, iops))
}

// Lift removes the limit.
func (d *Disk) Lift() error {
	if d.cgroup.v2 {
		return d.write("io.max", d.majMin+" wiops=max")
	}
	return d.write("blkio.throttle.write_iops_device", d.majMin+" 0")
}

func (d *Disk) write(file, value string) error {
	if err := os.WriteFile(filepath.Join(d.cgroup.dir, file), []byte(value), 0); err != nil {
		return fmt.Errorf("slowdisk: %s <- %q: %w", file, value, err)
	}
	return nil
}

// unmount unmounts the file system, retrying while a process that was
// killed still holds it.
func (d *Disk) unmount(t testing.TB) {
	var out string
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if out, err = run("umount", d.Dir); err == nil {
			return
		}
	}
	t.Errorf("slowdisk: umount %s: %v: %s", d.Dir, err, out)
}

// removeCgroup removes the cgroup once the processes in it are gone.
func (d *Disk) removeCgroup(t testing.TB) {
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err = os.Remove(d.cgroup.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
	}
	t.Errorf("slowdisk: remove the cgroup %s: %v", d.cgroup.dir, err)
}

// findCgroup returns where to make the cgroup: the root of a cgroup v2
// hierarchy with the io controller (enabled for its children), else the
// root of a cgroup v1 hierarchy with blkio.
func findCgroup() (cgroup, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return cgroup{}, err
	}
	defer f.Close()
	var v1, v2 string
	var seen []string
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		// "36 35 0:30 / /sys/fs/cgroup/blkio rw,relatime shared:1 - cgroup cgroup rw,blkio"
		pre, post, ok := strings.Cut(lines.Text(), " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(tail) < 3 || fields[3] != "/" {
			continue
		}
		mount := fields[4]
		switch tail[0] {
		case "cgroup2":
			seen = append(seen, "cgroup2 at "+mount)
			if controllers, err := os.ReadFile(filepath.Join(mount, "cgroup.controllers")); err == nil && hasWord(string(controllers), "io") && v2 == "" {
				v2 = mount
			}
		case "cgroup":
			seen = append(seen, "cgroup v1 at "+mount)
			if hasWord(strings.ReplaceAll(tail[2], ",", " "), "blkio") && v1 == "" {
				v1 = mount
			}
		}
	}
	if err := lines.Err(); err != nil {
		return cgroup{}, err
	}
	if v2 != "" {
		control := filepath.Join(v2, "cgroup.subtree_control")
		if err := os.WriteFile(control, []byte("+io"), 0); err != nil {
			return cgroup{}, fmt.Errorf("cgroup v2 at %s has the io controller, but enabling it for its children failed: %w", v2, err)
		}
		return cgroup{dir: v2, v2: true}, nil
	}
	if v1 != "" {
		return cgroup{dir: v1}, nil
	}
	return cgroup{}, fmt.Errorf("neither cgroup v2 with the io controller nor cgroup v1 with blkio is mounted (found: %s)", strings.Join(seen, "; "))
}

func hasWord(s, word string) bool {
	for _, w := range strings.Fields(s) {
		if w == word {
			return true
		}
	}
	return false
}

// attachLoop attaches image to a free loop device and returns the
// device, retrying while another process takes the free one first.
func attachLoop(image string) (string, error) {
	var out string
	var err error
	for range 10 {
		if out, err = run("losetup", "-f", "--show", image); err == nil {
			return strings.TrimSpace(out), nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "", fmt.Errorf("%w: %s", err, out)
}

// lookTool finds a system tool on PATH or in the sbin directories.
func lookTool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// run runs a system tool and returns its combined output.
func run(name string, args ...string) (string, error) {
	p, err := lookTool(name)
	if err != nil {
		return "", err
	}
	out, err := exec.Command(p, args...).CombinedOutput()
	return string(out), err
}

func statOf(path string) string {
	if _, err := os.Stat(path); err != nil {
		return err.Error()
	}
	return "present"
}
