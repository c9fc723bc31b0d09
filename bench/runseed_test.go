package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testbin"
)

// make bench's script (run-seed.sh) keeps seckilld out of the process
// group a terminal's Ctrl-C reaches: the interrupt stops the load tool,
// which still reads the server's audit and says it was interrupted, and
// then the script stops seckilld and removes its data dir. The test sends
// SIGINT to the script's whole group, as a terminal does.
func TestRunSeedInterruptedStillReadsTheAudit(t *testing.T) {
	bin := testbin.Dir(t, nil, "github.com/seckill/seckill/cmd/seckilld", "github.com/seckill/seckill/cmd/seckill-bench")
	root := t.TempDir() // the script runs bin/ of the directory above its own
	script, err := os.ReadFile("run-seed.sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "bench"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bench", "run-seed.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(root, "bin")); err != nil {
		t.Fatal(err)
	}
	resultPath := filepath.Join(root, "seed.json")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a bound for a hung script
	defer cancel()
	// An open loop at 200/s: the load lasts minutes unless interrupted,
	// at little CPU.
	cmd := exec.Command("bash", filepath.Join(root, "bench", "run-seed.sh"),
		"--rate", "200", "--requests", "100000", "--concurrency", "4", "--progress", "plain")
	cmd.Env = append(os.Environ(), "SEED_JSON="+resultPath)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	output, writer := io.Pipe()
	cmd.Stdout, cmd.Stderr = writer, writer
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	group := cmd.Process.Pid
	defer syscall.Kill(-group, syscall.SIGKILL)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); writer.Close() }()
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		scanner := bufio.NewScanner(output)
		for scanner.Scan() {
			lines <- scanner.Text()
		}
	}()
	var log strings.Builder
	var serverPID int
	var dataDir string
	// Wait for the load's first progress line: the campaign is defined and
	// reserves are flowing.
	for loading := false; !loading; {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("the script ended before the load began:\n%s", log.String())
			}
			log.WriteString(line + "\n")
			if rest, found := strings.CutPrefix(line, "seckilld pid "); found {
				fields := strings.Fields(rest)
				serverPID, _ = strconv.Atoi(fields[0])
				dataDir = filepath.Dir(strings.TrimSuffix(fields[len(fields)-3], ","))
			}
			loading = strings.HasPrefix(line, "[seed]")
		case <-ctx.Done():
			t.Fatalf("no progress line:\n%s", log.String())
		}
	}
	if serverPID == 0 || !strings.HasPrefix(dataDir, os.TempDir()) {
		t.Fatalf("no seckilld pid and data dir said (pid %d, dir %q):\n%s", serverPID, dataDir, log.String())
	}
	if err := syscall.Kill(-group, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for line := range lines {
		log.WriteString(line + "\n")
	}
	select {
	case err := <-exited:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != ExitChecksFailed {
			t.Errorf("script ended with %v, want exit %d (interrupted)\n%s", err, ExitChecksFailed, log.String())
		}
	case <-ctx.Done():
		t.Fatalf("the script did not end after SIGINT:\n%s", log.String())
	}
	body, err := os.ReadFile(resultPath)
	if err != nil {
		t.Fatalf("no result written: %v\n%s", err, log.String())
	}
	var result Result
	if err := json.Unmarshal(body, &result); err != nil {
		t.Fatal(err)
	}
	if result.Audit == nil || result.Audit.Error != "" || result.Audit.SKUsAudited != 1 || !result.Audit.OK {
		t.Errorf("audit after the interrupt %+v: want the server's audit read and holding\n%s", result.Audit, log.String())
	}
	if !strings.Contains(strings.Join(result.Failures, "\n"), "interrupted before the load finished") {
		t.Errorf("failures %q do not say the run was interrupted", result.Failures)
	}
	if err := syscall.Kill(serverPID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("seckilld (pid %d) still there after the script: %v", serverPID, err)
	}
	if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the script left its data dir %s: %v", dataDir, err)
	}
}
