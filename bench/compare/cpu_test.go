package compare

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// spinCPU burns this process's CPU until getrusage says it used want more
// (a minute bounds a machine too crowded to give it that).
func spinCPU(t *testing.T, want time.Duration) {
	t.Helper()
	start, deadline := selfCPU(), time.Now().Add(time.Minute)
	for selfCPU()-start < want {
		if time.Now().After(deadline) {
			t.Fatalf("used %v of CPU in a minute", selfCPU()-start)
		}
	}
}

func TestTreeCPUOfThisProcessGrowsWithWork(t *testing.T) {
	before, err := treeCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	spinCPU(t, 200*time.Millisecond)
	after, err := treeCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// /proc counts in 10 ms ticks.
	if after-before < 150*time.Millisecond {
		t.Fatalf("cpu went from %v to %v after 200 ms of work", before, after)
	}
}

// A live child's CPU counts towards its parent's tree.
func TestTreeCPUCountsLiveChildren(t *testing.T) {
	child := exec.Command("/bin/sh", "-c", "while :; do :; done")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = child.Process.Kill()
		_ = child.Wait()
	}()
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		t.Fatal(err)
	}
	proc, err := fs.Proc(child.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	var childTicks int64
	for deadline := time.Now().Add(time.Minute); childTicks < 20; {
		if time.Now().After(deadline) {
			t.Fatalf("the child used %d ticks in a minute", childTicks)
		}
		time.Sleep(10 * time.Millisecond)
		stat, err := proc.Stat()
		if err != nil {
			t.Fatal(err)
		}
		childTicks = ownTicks(stat)
	}
	self, err := fs.Proc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	selfStat, err := self.Stat()
	if err != nil {
		t.Fatal(err)
	}
	tree, err := treeCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Duration(ownTicks(selfStat)+childTicks) * time.Second / clockTicksPerSecond; tree < want {
		t.Fatalf("tree CPU %v, want at least this process's and the child's %v", tree, want)
	}
}
