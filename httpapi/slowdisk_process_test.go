package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/cmd/seckilld/seckilldtest"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/internal/slowdisk"
)

// answered is one reserve a load worker sent: when, how long it took,
// what came back.
type answered struct {
	start      time.Time
	took       time.Duration
	status     int
	reason     string
	retryAfter string
}

// The real seckilld on a disk slowed for real: its data dir on ext4 on a
// loop device, the process in a cgroup that lets it write to the device
// once a second (each fsync then takes about a second, beyond
// --max-queue-wait 300ms). Under load it answers 429 THROTTLED with
// Retry-After, /admin/stats says THROTTLED with the commit latency it
// saw, and the few buyers it admits (one probe at a time) wait one
// commit, not the two and more of a queue admitted by permits alone;
// once the limit is lifted it admits the crowd again.
func TestSlowDiskThrottlesAdmission(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the seckilld binary on a loop device")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: a loop device, mount and a cgroup (CI runs as root)")
	}
	t.Parallel()
	const maxQueueWait = 300 * time.Millisecond
	disk := slowdisk.New(t, 256<<20)
	bin := seckilldtest.Build(t, raceEnabled)
	start := time.Now().UTC().Truncate(time.Millisecond)
	campaigns, err := json.Marshal([]httpapi.Campaign{{CampaignID: "disk", StartAt: start, EndAt: start.Add(time.Hour),
		PaymentWindow: "15m", SKUs: []httpapi.CampaignSKU{{SKUID: "s", SaleLimit: 1_000_000}}}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "campaigns.json")
	if err := os.WriteFile(file, campaigns, 0o600); err != nil {
		t.Fatal(err)
	}
	// No snapshot writes: every write the cgroup may make is the log's.
	d := seckilldtest.Start(t, bin, filepath.Join(disk.Dir, "data"), []string{"SECKILL_ADMIN_TOKEN=" + testToken},
		"--campaigns", file, "--max-queue-wait", maxQueueWait.String(), "--snapshot-every", "-1", "--snapshot-interval", "-1s")
	if err := disk.Add(d.Cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}

	var (
		mu   sync.Mutex
		seen []answered
		next atomic.Int64
		stop = make(chan struct{})
		done = make(chan struct{})
	)
	count := func(since time.Time, status int, reason string) (n int) {
		mu.Lock()
		defer mu.Unlock()
		for _, a := range seen {
			if a.start.After(since) && a.status == status && (reason == "" || a.reason == reason) {
				n++
			}
		}
		return n
	}
	go func() {
		defer close(done)
		untilStopped(32, stop, func(w, _ int) bool {
			id := fmt.Sprintf("b%d", next.Add(1))
			begin := time.Now()
			r, err := tryReserve(d.Base, "disk", "s", id, id)
			if err != nil {
				t.Error(err)
				return false
			}
			mu.Lock()
			seen = append(seen, answered{begin, time.Since(begin), r.status, r.str("error"), r.header.Get("Retry-After")})
			mu.Unlock()
			if r.status == http.StatusTooManyRequests {
				time.Sleep(20 * time.Millisecond) // an impatient client: back before Retry-After
			}
			return true
		})
	}()
	var stopOnce sync.Once
	stopLoad := func() { stopOnce.Do(func() { close(stop); <-done }) }
	t.Cleanup(stopLoad) // before the daemon is killed (cleanups run last first)
	eventually(t, 60*time.Second, "reserves admitted on the fast disk", func() bool { return count(time.Time{}, http.StatusAccepted, "") >= 100 })

	// Slow: one write a second.
	if err := disk.Throttle(1); err != nil {
		t.Fatal(err)
	}
	throttledAt := time.Now()
	var last map[string]any // the last /admin/stats row read
	var fsyncMs float64     // the slowest fsync p99 /admin/stats showed while throttled
	sample := func() map[string]any {
		r := rawStatsRowAt(t, d.Base, "disk", "s")
		last = r
		return r
	}
	var stateSeen time.Time
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("THROTTLED seen in /admin/stats at %v; answers since: %d THROTTLED, %d admitted; last /admin/stats row: %v",
				stateSeen, count(stateSeen, http.StatusTooManyRequests, "THROTTLED"), count(stateSeen, http.StatusAccepted, ""), last)
		}
	})
	eventually(t, 120*time.Second, "THROTTLED in /admin/stats and in answers, and 5 buyers admitted since", func() bool {
		r := sample()
		if r["status"] == "THROTTLED" && r["commit_latency_ms"].(float64) >= float64(maxQueueWait.Milliseconds()) && stateSeen.IsZero() {
			stateSeen = time.Now()
		}
		if p, ok := r["fsync_p99_ms"].(float64); ok {
			fsyncMs = max(fsyncMs, p)
		}
		return !stateSeen.IsZero() && count(stateSeen, http.StatusTooManyRequests, "THROTTLED") >= 100 &&
			count(stateSeen, http.StatusAccepted, "") >= 5
	})
	liftedAt := time.Now()
	if err := disk.Lift(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "OPEN again and 500 reserves admitted after the limit was lifted", func() bool {
		return sample()["status"] == "OPEN" && count(liftedAt, http.StatusAccepted, "") >= 500
	})
	stopLoad()

	// The waits of the buyers admitted while the disk was slow (sent
	// after the server said THROTTLED, answered before the lift).
	mu.Lock()
	var slow, fast []time.Duration
	for _, a := range seen {
		if a.reason == "THROTTLED" && a.retryAfter == "" {
			t.Errorf("429 THROTTLED without Retry-After")
		}
		switch {
		case a.status != http.StatusAccepted:
		case a.start.After(stateSeen) && a.start.Add(a.took).Before(liftedAt):
			slow = append(slow, a.took)
		case a.start.After(liftedAt):
			fast = append(fast, a.took)
		}
	}
	mu.Unlock()
	slices.Sort(slow)
	slices.Sort(fast)
	q := func(d []time.Duration, p float64) time.Duration { return d[int(p*float64(len(d)-1))] }
	throttled := count(stateSeen, http.StatusTooManyRequests, "THROTTLED")
	t.Logf("THROTTLED %v after the limit; slow disk for %v: %d admitted, waits p50 %v max %v (fsync p99 up to %.0f ms), %d THROTTLED; lifted: %d admitted, waits p50 %v p99 %v",
		stateSeen.Sub(throttledAt).Round(time.Millisecond), liftedAt.Sub(stateSeen).Round(time.Millisecond), len(slow), q(slow, 0.5), q(slow, 1), fsyncMs,
		throttled, len(fast), q(fast, 0.5), q(fast, 0.99))
	if fsyncMs < float64(maxQueueWait.Milliseconds()) {
		t.Fatalf("fsync p99 at most %.0f ms under the limit: the disk was not slowed (last /admin/stats row: %v)", fsyncMs, last)
	}
	// Admission stopped but for a probe at a time: at most one buyer per
	// commit, and each commit took longer than max_queue_wait (a queue
	// admitted by permits alone took a thousand at once).
	if most := 1 + int(liftedAt.Sub(stateSeen)/maxQueueWait); len(slow) > most {
		t.Errorf("%d buyers admitted in %v of slow disk: more than one per max_queue_wait (%d)", len(slow), liftedAt.Sub(stateSeen), most)
	}
	// A probe waits for its own commit: one fsync, and the answer's way
	// back through a loaded machine (up to half a second); now and then
	// a client stalls longer, so the median is held to it, the slowest
	// to two commits.
	commit := time.Duration(fsyncMs * float64(time.Millisecond))
	if q(slow, 0.5) > commit+500*time.Millisecond || q(slow, 1) > 2*commit+500*time.Millisecond {
		t.Errorf("buyers admitted while the disk was slow waited p50 %v, max %v: more than one commit (fsync p99 %v) + 500 ms, or two: %v", q(slow, 0.5), q(slow, 1), commit, slow)
	}
	if q(fast, 0.5) >= maxQueueWait {
		t.Errorf("after the limit was lifted buyers waited p50 %v, not below max_queue_wait", q(fast, 0.5))
	}
}

// rawStatsRowAt returns a SKU's /admin/stats row from the server at base.
func rawStatsRowAt(t *testing.T, base, campaignID, skuID string) map[string]any {
	t.Helper()
	r, err := try(http.MethodGet, base+"/admin/stats", nil, map[string]string{"Authorization": "Bearer " + testToken})
	if err != nil || r.status != http.StatusOK {
		t.Fatalf("GET /admin/stats: %v %v", r, err)
	}
	var doc struct {
		Rows []map[string]any `json:"skus"`
	}
	if err := json.Unmarshal(r.raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, row := range doc.Rows {
		if row["campaign_id"] == campaignID && row["sku_id"] == skuID {
			return row
		}
	}
	t.Fatalf("no stats row for %s/%s: %s", campaignID, skuID, r.raw)
	return nil
}
