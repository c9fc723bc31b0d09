package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/cmd/seckilld/seckilldtest"
)

// startDaemon runs the binary on dir with a random port and waits until it
// is ready; the admin token comes through the environment.
func startDaemon(t *testing.T, bin, dir string) *seckilldtest.Daemon {
	t.Helper()
	return seckilldtest.Start(t, bin, dir, []string{"SECKILL_ADMIN_TOKEN=" + testToken})
}

// accepted is one 202 a client saw.
type accepted struct {
	requestID, userID, reservationID string
	tokenID                          int
	raw                              string
}

// load reserves on the demo SKU from workers goroutines, each request with
// a new request and user id, until stop is closed or the server goes away;
// it returns every 202 seen.
func load(base, prefix string, workers int, stop <-chan struct{}, count *atomic.Int64) []accepted {
	var mu sync.Mutex
	var seen []accepted
	untilStopped(workers, stop, func(w, i int) bool {
		rid, uid := fmt.Sprintf("%s-w%d-r%d", prefix, w, i), fmt.Sprintf("%s-w%d-u%d", prefix, w, i)
		r, err := tryReserve(base, "demo", "sku-1", rid, uid)
		if err != nil {
			return false // the server went away
		}
		if r.status == http.StatusAccepted {
			mu.Lock()
			seen = append(seen, accepted{rid, uid, r.str("reservation_id"), num(r, "token_id"), string(r.raw)})
			mu.Unlock()
			count.Add(1)
		}
		return true
	})
	return seen
}

// untilStopped runs step(worker, i) for i = 0, 1, ... on workers
// goroutines until stop is closed or step returns false, and waits for
// them all: the load loop of the process tests.
func untilStopped(workers int, stop <-chan struct{}, step func(w, i int) bool) {
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if !step(w, i) {
					return
				}
			}
		}()
	}
	wg.Wait()
}

// verify checks that every 202 in seen is durable on the server at base:
// the reservation exists with the same request, user and token, and a
// repeat of its request_id gets the same 202 body.
func verify(t *testing.T, base string, seen []accepted) {
	t.Helper()
	errs := make(chan error, len(seen))
	parallel(8, func(w int) {
		for i := w; i < len(seen); i += 8 {
			a := seen[i]
			g, err := try(http.MethodGet, base+"/v1/reservations/"+a.reservationID, nil, nil)
			if err == nil && (g.status != http.StatusOK || g.str("request_id") != a.requestID || g.str("user_id") != a.userID || num(g, "token_id") != a.tokenID) {
				err = fmt.Errorf("acknowledged %s lost or changed: %v", a.reservationID, g)
			}
			if err == nil {
				var r response
				r, err = tryReserve(base, "demo", "sku-1", a.requestID, a.userID)
				if err == nil && string(r.raw) != a.raw {
					err = fmt.Errorf("repeat of %s: %v, first %s", a.requestID, r, a.raw)
				}
			}
			if err != nil {
				errs <- err
				return
			}
		}
	})
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// The real binary: SIGTERM under load exits 0 after answering what it
// accepted; SIGKILL under load loses no 202 the clients saw; the demo
// campaign is defined on the first start only.
func TestDaemonCrashAndShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the seckilld binary")
	}
	t.Parallel()
	bin := seckilldtest.Build(t, raceEnabled)
	dir := t.TempDir()
	var all []accepted

	// 1. SIGTERM under load: exit status 0, every 202 durable.
	d := startDaemon(t, bin, dir)
	first := call(t, http.MethodGet, d.Base+"/v1/campaigns/demo/skus/sku-1", nil, nil)
	if first.str("status") != "OPEN" {
		t.Fatalf("demo campaign: %v", first)
	}
	var count atomic.Int64
	stop := make(chan struct{})
	seenc := make(chan []accepted)
	go func() { seenc <- load(d.Base, "term", 8, stop, &count) }()
	eventually(t, 2*time.Minute, "load", func() bool { return count.Load() >= 100 })
	if err := d.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.Exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, d.Stderr())
		}
	case <-time.After(2 * time.Minute): // a bound for a hung shutdown
		t.Fatal("seckilld did not exit after SIGTERM")
	}
	close(stop)
	all = append(all, <-seenc...)

	// 2. SIGKILL under load on the same data dir.
	d = startDaemon(t, bin, dir)
	if again := call(t, http.MethodGet, d.Base+"/v1/campaigns/demo/skus/sku-1", nil, nil); again.str("start_at") != first.str("start_at") {
		t.Fatalf("demo campaign redefined on restart: %v, first %v", again, first)
	}
	verify(t, d.Base, all)
	count.Store(0)
	stop = make(chan struct{})
	go func() { seenc <- load(d.Base, "kill", 8, stop, &count) }()
	eventually(t, 2*time.Minute, "load", func() bool { return count.Load() >= 200 })
	if err := d.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := <-d.Exited; err == nil || !isKilled(err) {
		t.Fatalf("exit after SIGKILL: %v", err)
	}
	close(stop)
	all = append(all, <-seenc...)

	// 3. Everything acknowledged is there after the crash (the kill left
	// the data dir's lock to the kernel, which dropped it), and a second
	// seckilld on the same data dir refuses to start beside the first.
	d = startDaemon(t, bin, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a bound for a second one that does not exit
	defer cancel()
	second := exec.CommandContext(ctx, bin, "--addr", "127.0.0.1:0", "--data-dir", dir)
	second.Env = append(second.Environ(), "SECKILL_ADMIN_TOKEN="+testToken)
	out, err := second.CombinedOutput()
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "data dir in use by another engine") {
		t.Fatalf("a second seckilld on the same data dir: %v\n%s", err, out)
	}
	verify(t, d.Base, all)
	a := call(t, http.MethodGet, d.Base+"/admin/campaigns/demo/skus/sku-1/audit", nil, map[string]string{"Authorization": "Bearer " + testToken})
	// A reserve made durable just before the kill may never have reached
	// its client: at most one per worker.
	if n := num(a, "reservations"); a.status != http.StatusOK || a.body["invariant_ok"] != true || n < len(all) || n > len(all)+8 {
		t.Fatalf("audit after crash (%d acknowledged): %v", len(all), a)
	}
	t.Logf("%d acknowledged reservations survived a SIGTERM and a SIGKILL", len(all))
}

func isKilled(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}
