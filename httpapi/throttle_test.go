package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/httpapi"
)

// While a SKU's commits take longer than max_queue_wait, reserve answers
// 429 THROTTLED with Retry-After (the status, /admin/stats and the
// metrics say so), but for one probe at a time while nothing waits; once
// commits are fast again it admits 1, 2, 4, ... reserves, one step per
// group commit, up to its bound, and is OPEN again. The engine's figures
// are replaced by those the test sets (faultEngine.setLoad): no time
// passes.
func TestThrottledWhileCommitsAreSlow(t *testing.T) {
	t.Parallel()
	faults := &faultEngine{}
	ts := startServer(t, serverOptions{
		faults: faults,
		config: func(c *httpapi.Config) {
			c.MaxQueueWait = 300 * time.Millisecond
			c.MinConsumerRate = 100 // 30 permits
			manualStats(c)
		},
	})
	ts.define(campaign("disk", "15m", map[string]int{"s": 1000}))
	setLoad := func(l skuLoad) { faults.setLoad("disk", "s", l) }
	next := 0
	// round sends n reserves and checks that exactly admitted of them
	// reach the engine (held there until the others are answered) and
	// the rest are answered 429 THROTTLED.
	round := func(n, admitted int) {
		t.Helper()
		h := &held{arrived: make(chan engineCall, n), release: make(chan struct{})}
		faults.setHooks(hooks{before: func(ctx context.Context, c engineCall) error {
			if c.kind != kindReserve {
				return nil
			}
			return h.hold(ctx, c)
		}})
		first := next
		next += n
		answers := sendReserves(t, ts.base, "disk", "s", n, func(i int) (string, string) {
			return fmt.Sprintf("r%d", first+i), fmt.Sprintf("u%d", first+i)
		})
		h.waitArrivals(t, admitted)
		for range n - admitted {
			r := <-answers
			want(t, r, http.StatusTooManyRequests, "THROTTLED")
			if r.header.Get("Retry-After") == "" {
				t.Fatalf("429 THROTTLED without Retry-After: %v", r)
			}
		}
		close(h.release)
		for range admitted {
			want(t, <-answers, http.StatusAccepted, "")
		}
	}
	status := func() string { return ts.get("/v1/campaigns/disk/skus/s").str("status") }

	// Commits take 1.5 s and one is under way: nothing is admitted.
	setLoad(skuLoad{commitLatency: 1500 * time.Millisecond, commitWait: 200 * time.Millisecond, commits: 5})
	round(10, 0)
	r := ts.reserve("disk", "s", "slow-1", "slow-1")
	if r.header.Get("Retry-After") != "2" {
		t.Fatalf("Retry-After %q with commits of 1.5 s, want 2", r.header.Get("Retry-After"))
	}
	if s := status(); s != "THROTTLED" {
		t.Fatalf("status while commits are slow: %s", s)
	}
	ts.srv.SampleStats(time.Now())
	row := rawStatsRow(t, ts, "disk", "s")
	for field, v := range map[string]float64{"commit_latency_ms": 1500, "commit_wait_ms": 200, "expected_wait_ms": 1500,
		"max_queue_wait_ms": 300, "permits_bound": 0} {
		if row[field] != v {
			t.Errorf("/admin/stats %s = %v, want %v (row %v)", field, row[field], v, row)
		}
	}
	if row["status"] != "THROTTLED" {
		t.Errorf("/admin/stats status %v", row["status"])
	}
	m := string(ts.get("/metrics").raw)
	for _, line := range []string{
		`seckill_sku_commit_latency_seconds{campaign_id="disk",sku_id="s"} 1.5`,
		`seckill_sku_commit_wait_seconds{campaign_id="disk",sku_id="s"} 0.2`,
		`seckill_sku_admission_expected_wait_seconds{campaign_id="disk",sku_id="s"} 1.5`,
		`seckill_sku_admission_permits{campaign_id="disk",sku_id="s"} 0`,
		`seckill_ingress_rejections_total{layer="throttled"} 11`,
		`seckill_http_requests_total{outcome="THROTTLED",route="reserve"} 11`,
	} {
		if !strings.Contains(m, line) {
			t.Errorf("metrics lack %s:\n%s", line, grepLines(m, "seckill_sku_"))
		}
	}

	// Still slow, but nothing waits any more: one probe at a time.
	setLoad(skuLoad{commitLatency: 1500 * time.Millisecond, commits: 5})
	round(6, 1)

	// Fast again: 2, 4, 8, 16 reserves admitted at the next four commits,
	// THROTTLED meanwhile, then the bound of 30 and OPEN.
	for i, admitted := range []int{2, 4, 8, 16} {
		setLoad(skuLoad{commitLatency: 2 * time.Millisecond, commits: uint64(6 + i)})
		if s := status(); s != "THROTTLED" {
			t.Fatalf("status at the ramp's step %d: %s", i, s)
		}
		round(admitted+3, admitted)
	}
	setLoad(skuLoad{commitLatency: 2 * time.Millisecond, commits: 10})
	if s := status(); s != "OPEN" {
		t.Fatalf("status after the ramp: %s", s)
	}
	h := newHeld()
	faults.setHooks(hooks{before: func(ctx context.Context, c engineCall) error { return h.hold(ctx, c) }})
	answers := sendReserves(t, ts.base, "disk", "s", 31, func(i int) (string, string) {
		return fmt.Sprintf("open-%d", i), fmt.Sprintf("open-%d", i)
	})
	h.waitArrivals(t, 30)
	want(t, <-answers, http.StatusTooManyRequests, "QUEUE_FULL") // out of permits, open: busy
	close(h.release)
}

// rawStatsRow returns a SKU's /admin/stats row as decoded JSON.
func rawStatsRow(t *testing.T, ts *testServer, campaignID, skuID string) map[string]any {
	t.Helper()
	return rawStatsRowAt(t, ts.base, campaignID, skuID)
}
