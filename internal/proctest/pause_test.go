package proctest

import (
	"os/exec"
	"testing"
)

// TestPauseWaitsForTheStop: after Pause every thread of the process is
// stopped, and after Resume none is.
func TestPauseWaitsForTheStop(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if AllStopped(cmd.Process.Pid) {
		t.Fatal("a running process reads as stopped")
	}
	if err := Pause(cmd.Process); err != nil {
		t.Fatal(err)
	}
	if !AllStopped(cmd.Process.Pid) {
		t.Fatal("Pause returned before the process stopped")
	}
	if err := Resume(cmd.Process); err != nil {
		t.Fatal(err)
	}
	for AllStopped(cmd.Process.Pid) {
		// SIGCONT too is delivered asynchronously: wait for it to take hold.
	}
}

// TestAllStoppedOfNoProcess: a pid with no /proc entry is not "stopped".
func TestAllStoppedOfNoProcess(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if AllStopped(cmd.Process.Pid) {
		t.Fatal("an exited process reads as stopped")
	}
}
