package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/cmd/seckilld/seckilldtest"
)

const killToken = "kill-loop-token"

// startDaemon runs seckilld on dir with a small snapshot cadence, given as
// SECKILL_SNAPSHOT_* (each flag can also be set from the environment), and
// waits until it is ready.
func startDaemon(t *testing.T, bin, dir string) *seckilldtest.Daemon {
	t.Helper()
	return seckilldtest.Start(t, bin, dir, []string{"SECKILL_ADMIN_TOKEN=" + killToken,
		"SECKILL_SNAPSHOT_EVERY=300", "SECKILL_SNAPSHOT_INTERVAL=200ms", "SECKILL_SNAPSHOT_KEEP=2"})
}

// ack is one reservation a client saw accepted (202), and whether it saw
// its cancel succeed.
type ack struct {
	reservationID, requestID, userID string
	token                            float64
	cancelled                        bool
}

func post(url string, body any) (int, map[string]any, error) {
	return sendJSON(http.MethodPost, url, "", body)
}

// sendJSON sends method to url with body as JSON (nil: none) and, unless
// token is empty, the bearer token, and returns the status and the
// decoded answer (nil when it is not a JSON object).
func sendJSON(method, url, token string, body any) (int, map[string]any, error) {
	return sendJSONVia(http.DefaultClient, method, url, token, body)
}

// sendJSONVia is sendJSON through client c.
func sendJSONVia(c *http.Client, method, url, token string, body any) (int, map[string]any, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var m map[string]any
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	json.Unmarshal(raw, &m)
	return resp.StatusCode, m, nil
}

// loadProgress is what the load has seen so far: reserves accepted,
// whether one answered SOLD_OUT (then the load is mostly such answers),
// and how many had no known result.
type loadProgress struct {
	accepted atomic.Int64
	soldOut  atomic.Bool
	unknown  atomic.Int64 // reserves answered 504 RESULT_UNKNOWN
}

// reached reports whether n reserves were accepted or the SKU sold out.
func (p *loadProgress) reached(n int64) bool { return p.accepted.Load() >= n || p.soldOut.Load() }

// load reserves (and cancels one in two) on the demo SKU from 8 workers
// with fresh ids until stop is closed or the server goes away.
func load(base, prefix string, stop <-chan struct{}, progress *loadProgress) []ack {
	return loadVia(http.DefaultClient, base, prefix, stop, progress)
}

// loadPace is the least time between two reserves of one load worker:
// the tests need a sale under way when a process is killed or cut off,
// not the most the machine can sell, and 8 unpaced workers take every
// core for as long as a test waits for a lease to run out (and every
// other test of make test with them). 8 workers: at most 400 reserves/s.
const loadPace = 20 * time.Millisecond

// loadVia is load through client c: a worker whose request fails (no
// answer within c's timeout, no route) stops.
func loadVia(c *http.Client, base, prefix string, stop <-chan struct{}, progress *loadProgress) []ack {
	var mu sync.Mutex
	var acks []ack
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pace := time.NewTicker(loadPace)
			defer pace.Stop()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-pace.C:
				}
				rid, uid := fmt.Sprintf("%s-w%d-r%d", prefix, w, i), fmt.Sprintf("%s-w%d-u%d", prefix, w, i)
				code, body, err := sendJSONVia(c, http.MethodPost, base+"/v1/campaigns/demo/skus/sku-1/reservations", "", map[string]string{"request_id": rid, "user_id": uid})
				if err != nil {
					return
				}
				if code != http.StatusAccepted {
					if code == http.StatusConflict && body["error"] == "SOLD_OUT" {
						progress.soldOut.Store(true)
					}
					if code == http.StatusGatewayTimeout {
						progress.unknown.Add(1)
					}
					continue
				}
				a := ack{reservationID: body["reservation_id"].(string), requestID: rid, userID: uid, token: body["token_id"].(float64)}
				progress.accepted.Add(1)
				if i%2 == 0 {
					code, _, err := sendJSONVia(c, http.MethodPost, base+"/v1/reservations/"+a.reservationID+"/cancel", "", nil)
					a.cancelled = err == nil && code == http.StatusOK
				}
				mu.Lock()
				acks = append(acks, a)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return acks
}

// checkAcks asserts every acknowledged reservation is there, unchanged, and
// CLOSED if the client saw its cancel succeed.
func checkAcks(t *testing.T, base string, acks []ack) {
	t.Helper()
	errs := make(chan error, len(acks))
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(acks); i += 8 {
				a := acks[i]
				resp, err := http.Get(base + "/v1/reservations/" + a.reservationID)
				if err != nil {
					errs <- err
					return
				}
				var v map[string]any
				json.NewDecoder(resp.Body).Decode(&v)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || v["request_id"] != a.requestID || v["user_id"] != a.userID || v["token_id"] != a.token ||
					(a.cancelled && v["state"] != "CLOSED") {
					errs <- fmt.Errorf("acknowledged %s (cancelled %v) lost or changed: %d %v", a.reservationID, a.cancelled, resp.StatusCode, v)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestKillLoopWithSnapshots runs the real seckilld with frequent automatic
// snapshots, reserves and cancels under load, takes online snapshots
// through seckillctl, and kills it with SIGKILL, several times over one
// data dir: after every restart each 202 the clients saw is there, and
// seckillctl verify (which checks every snapshot against the log) exits 0,
// offline and while the engine runs. SECKILL_SOAK_CYCLES sets the number
// of cycles (default 3; make soak runs 50).
func TestKillLoopWithSnapshots(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the seckilld binary")
	}
	cycles := 3
	if s := os.Getenv("SECKILL_SOAK_CYCLES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("SECKILL_SOAK_CYCLES=%q", s)
		}
		cycles = n
	}
	bin := seckilldtest.Build(t, raceEnabled)
	dir := t.TempDir()
	skuDir := filepath.Join(dir, "demo", "sku-1")
	var all []ack
	snapshots, logFirst := 0, uint64(0)
	for cycle := 0; cycle < cycles; cycle++ {
		d := startDaemon(t, bin, dir)
		checkAcks(t, d.Base, all)
		if t.Failed() {
			return
		}
		var progress loadProgress
		stop := make(chan struct{})
		acks := make(chan []ack)
		go func() { acks <- load(d.Base, fmt.Sprintf("c%d", cycle), stop, &progress) }()
		// Once the 10,000 demo tokens are gone (cancels return half of
		// them), the load is SOLD_OUT answers.
		waitLoad(t, &progress, 150)
		// Online: a snapshot through the admin route, and verify beside the
		// running engine (read-only; a torn tail being written is fine).
		wantCode(t, 0, "snapshot", "--server", d.Base, "--admin-token", killToken, "--campaign", "demo", "--sku", "sku-1")
		wantCode(t, 0, "verify", skuDir)
		waitLoad(t, &progress, progress.accepted.Load()+100) // the kill lands in the load
		if err := d.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := <-d.Exited; !isKilled(err) {
			t.Fatalf("exit after SIGKILL: %v", err)
		}
		close(stop)
		all = append(all, <-acks...)

		rep := verifySKUReport(t, wantCode(t, 0, "verify", skuDir))
		snapshots, logFirst = len(rep.Snapshots), rep.Log.FirstIndex
		if snapshots == 0 || rep.Counts.Reservations < uint32(len(all)) {
			t.Fatalf("cycle %d: %d snapshots, %d reservations for %d acknowledged", cycle, snapshots, rep.Counts.Reservations, len(all))
		}
	}
	d := startDaemon(t, bin, dir)
	checkAcks(t, d.Base, all)
	t.Logf("%d cycles: %d acknowledged reservations survived; %d snapshots kept, the log starts at record %d",
		cycles, len(all), snapshots, logFirst)
}

// waitLoad waits until the load has n reserves accepted or sold out (2
// minutes bound a load that makes no progress).
func waitLoad(t *testing.T, progress *loadProgress, n int64) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); !progress.reached(n); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the load has %d reserves accepted after 2 minutes, none sold out; waiting for %d", progress.accepted.Load(), n)
		}
	}
}

func isKilled(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}
