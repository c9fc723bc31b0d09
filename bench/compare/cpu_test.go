package compare

import (
	"os"
	"testing"
	"time"
)

func TestParseProcStatCountsFieldsAfterTheCommandName(t *testing.T) {
	line := []byte("4242 (redis server) S 7 4242 4242 0 -1 4194560 100 0 0 0 150 50 3 2 20 0 4 0 100 1000 200\n")
	times, err := parseProcStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if times.pid != 4242 || times.ppid != 7 || times.ticks != 150+50+3+2 {
		t.Fatalf("got %+v, want pid 4242 ppid 7 ticks 205", times)
	}
	if _, err := parseProcStat([]byte("garbage")); err == nil {
		t.Fatal("garbage parsed")
	}
}

func TestTreeCPUOfThisProcessGrowsWithWork(t *testing.T) {
	before, err := treeCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(150 * time.Millisecond)
	spins := 0
	for time.Now().Before(deadline) {
		spins++
	}
	after, err := treeCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after < before || spins == 0 {
		t.Fatalf("cpu went from %v to %v", before, after)
	}
	if selfCPU() <= 0 {
		t.Fatal("getrusage reported no CPU")
	}
}
