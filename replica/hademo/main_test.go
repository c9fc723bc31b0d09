package main

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/lockedbuf"
	"github.com/seckill/seckill/internal/proctest"
	"github.com/seckill/seckill/internal/testbin"
)

// TestHADemo runs make ha-demo once, small: it must end with every
// check held (run returns nil only then) and say so.
func TestHADemo(t *testing.T) {
	bin := testbin.Dir(t, nil, "github.com/seckill/seckill/cmd/seckilld",
		"github.com/seckill/seckill/cmd/seckill-router", "github.com/seckill/seckill/cmd/seckillctl")
	var out strings.Builder
	if err := run(config{bin: bin, data: t.TempDir(), before: 200, after: 50}, &out); err != nil {
		t.Fatalf("ha-demo: %v\n%s", err, out.String())
	}
	for _, want := range []string{"a (", "leads epoch 1", "b took over in epoch 2", "acknowledged reservations found through the router",
		"rejoined as b's standby", "both data dirs clean"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("ha-demo printed no %q:\n%s", want, out.String())
		}
	}
	t.Log(out.String())
}

// TestHADemoInterrupted cuts make ha-demo short with SIGINT (a Ctrl-C) once
// the replica set is up: run returns errInterrupted (main exits 130),
// every process it started has ended, and its temporary folder is gone.
func TestHADemoInterrupted(t *testing.T) {
	bin := testbin.Dir(t, nil, "github.com/seckill/seckill/cmd/seckilld",
		"github.com/seckill/seckill/cmd/seckill-router", "github.com/seckill/seckill/cmd/seckillctl")
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where run makes its temporary folder
	interrupt := make(chan os.Signal, 1)
	signal.Notify(interrupt, os.Interrupt)
	defer signal.Stop(interrupt)
	out := &interruptWhen{line: "leads epoch 1"}
	err := run(config{bin: bin, before: 1 << 30, after: 50, interrupt: interrupt}, out)
	if !errors.Is(err, errInterrupted) {
		t.Fatalf("ha-demo after SIGINT: %v, want %v\n%s", err, errInterrupted, out.b.String())
	}
	if !out.sent {
		t.Fatalf("ha-demo ended before the replica set was up:\n%s", out.b.String())
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("left in the temporary folder: %s", e.Name())
	}
	// Every child was waited for: none is left for this process to reap.
	if pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil); err != syscall.ECHILD {
		t.Errorf("a child of the demo still runs or was not waited for: pid %d, %v", pid, err)
	}
}

// interruptWhen is the demo's output; it sends this process SIGINT once
// a line holding line was written.
type interruptWhen struct {
	b    strings.Builder
	line string
	sent bool
}

func (w *interruptWhen) Write(p []byte) (int, error) {
	w.b.Write(p)
	if !w.sent && strings.Contains(w.b.String(), w.line) {
		w.sent = true
		syscall.Kill(os.Getpid(), syscall.SIGINT)
	}
	return len(p), nil
}

// TestHADemoCtrlC runs make ha-demo's command as a terminal runs it, in
// the foreground process group, and once the replica set is up sends
// SIGINT to that whole group, as a Ctrl-C does (cells/cluster.sh's
// TestClusterScriptWithReplicas, for make cluster): etcd, the replicas
// and the router are not in that group, so the demo stops them in its
// order (router, replicas, then etcd) and no replica logs that it could
// not release its leader key; the demo exits 130 and nothing it started
// runs any more.
func TestHADemoCtrlC(t *testing.T) {
	bin := testbin.Dir(t, nil, "github.com/seckill/seckill/cmd/seckilld", "github.com/seckill/seckill/cmd/seckill-router",
		"github.com/seckill/seckill/cmd/seckillctl", "github.com/seckill/seckill/replica/hademo")
	data := t.TempDir()
	cmd := exec.Command(filepath.Join(bin, "hademo"), "--bin", bin, "--data", data, "--before", "1000000000")
	var out lockedbuf.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// The demo leads a process group, as make and go run do in a
	// terminal's foreground group: the test's Ctrl-C signals that group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	for deadline := time.Now().Add(3 * time.Minute); !strings.Contains(out.String(), "leads epoch 1"); time.Sleep(50 * time.Millisecond) {
		select {
		case err := <-exited:
			t.Fatalf("ha-demo exited before the replica set was up: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica set never came up:\n%s", out.String())
		}
	}
	started, err := proctest.Children(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if len(started) != 4 {
		t.Fatalf("the demo runs %v, want etcd, two seckillds and the router\n%s", started, out.String())
	}
	proctest.Interrupt(t, "ha-demo", cmd.Process.Pid, started, exited, func() int { return cmd.ProcessState.ExitCode() }, &out, data,
		"releasing the leader key failed")
}
