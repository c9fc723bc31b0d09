package actors

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
)

// The crash child: reserves under load and appends every acknowledged
// reservation id to a side file after the reply, until it is killed.
const crashChildEnv = "SECKILL_CRASH_CHILD_DIR"

func TestCrashChild(t *testing.T) {
	d := sku.Definition{CampaignID: "c1", SKUID: "s1", StartAt: 0, EndAt: 1 << 50,
		PaymentWindowMs: 60_000, SaleLimit: 1 << 20, ReleaseOnClose: true}
	runCrashChild(t, crashChildEnv, []sku.Definition{d}, func(e *Engine, round string, g, i int) string {
		id := fmt.Sprintf("%s-%d-%d", round, g, i)
		res, err := e.Reserve(context.Background(), "c1", "s1", "r"+id, "u"+id)
		if err != nil || res.Outcome != sku.OutcomeAccepted {
			return ""
		}
		return res.Reservation.ReservationID
	})
}

// crashChildAcked is the line a crash child prints on its standard output
// once the first reservation of its round is acknowledged: its SKUs are
// defined (durably: Define returns after the commit) and it reserves.
const crashChildAcked = "crash child: first reservation acknowledged"

// runCrashChild is the body of a crash child, run only when env names
// its data dir: it opens the engine there, defines defs, and has 64
// goroutines call step(e, round, g, i) for i = 0, 1, ... until the process
// is killed, appending each reservation id step returns ("" none) to
// acked.txt after the reply: acknowledged. After the first it prints
// crashChildAcked.
func runCrashChild(t *testing.T, env string, defs []sku.Definition, step func(e *Engine, round string, g, i int) string) {
	dir := os.Getenv(env)
	if dir == "" {
		t.Skip("only run as the child of a kill -9 test")
	}
	e, err := Open(Config{DataDir: dir, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range defs {
		if err := e.Define(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
	side, err := os.OpenFile(filepath.Join(dir, "acked.txt"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var first sync.Once
	round := os.Getenv("SECKILL_CRASH_ROUND")
	var wg sync.WaitGroup
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				if id := step(e, round, g, i); id != "" {
					mu.Lock()
					fmt.Fprintln(side, id)
					mu.Unlock()
					first.Do(func() { fmt.Println(crashChildAcked) })
				}
			}
		}()
	}
	wg.Wait()
}

// TestKillDuringReserve kills a reserving child with SIGKILL at a random
// moment, several rounds on one data dir. After each kill every
// reservation the child saw acknowledged is present and the audit is clean.
func TestKillDuringReserve(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	dir := t.TempDir()
	rounds := 3
	for round := 0; round < rounds; round++ {
		killChild(t, "TestCrashChild", crashChildEnv, dir, round)

		acked := readLines(t, filepath.Join(dir, "acked.txt"))
		e, err := Open(Config{DataDir: dir, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		a, err := e.Audit(ctxT(t), "c1", "s1")
		if err != nil {
			t.Fatal(err)
		}
		if !a.OK() {
			t.Fatalf("round %d: audit after kill: %v", round, a.Violations)
		}
		for _, id := range acked {
			if _, err := e.Get(ctxT(t), id); err != nil {
				t.Fatalf("round %d: acknowledged %s lost after kill -9: %v", round, id, err)
			}
		}
		if len(acked) == 0 {
			t.Fatalf("round %d: the child acknowledged nothing", round)
		}
		t.Logf("round %d: %d acknowledged, %d on disk", round, len(acked), a.Counts.Reservations)
		e.Close()
	}
}

// killChild runs the test named child in a child process on dir (passed
// in the environment variable env, the round in SECKILL_CRASH_ROUND),
// waits until it acknowledged its first reservation (crashChildAcked: its
// SKUs are defined and it reserves), kills it with SIGKILL at a random
// moment up to 0.7 s later, and reaps it.
func killChild(t *testing.T, child, env, dir string, round int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env+"="+dir, fmt.Sprintf("SECKILL_CRASH_ROUND=%d", round))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked, ended := make(chan struct{}), make(chan struct{})
	var said strings.Builder // what the child printed besides the mark
	go func() {
		defer close(ended)
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			if lines.Text() == crashChildAcked {
				close(acked)
			} else {
				said.WriteString(lines.Text() + "\n")
			}
		}
	}()
	select {
	case <-acked:
	case <-ended:
		err := cmd.Wait()
		t.Fatalf("round %d: the crash child ended before acknowledging a reservation: %v\n%s", round, err, said.String())
	case <-time.After(2 * time.Minute): // a bound for a stuck child, not a time the test counts on
		cmd.Process.Kill()
		<-ended
		cmd.Wait()
		t.Fatalf("round %d: the crash child acknowledged no reservation in 2 minutes\n%s", round, said.String())
	}
	time.Sleep(time.Duration(rand.IntN(700)) * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-ended
	_ = cmd.Wait()
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		if line := strings.TrimSpace(s.Text()); line != "" {
			out = append(out, line)
		}
	}
	return out
}
