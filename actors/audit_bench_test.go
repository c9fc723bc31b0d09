package actors

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/benchsize"
	"github.com/seckill/seckill/wal"
)

// BenchmarkAuditDuringSale audits a SKU holding 1, 4 and 8 million
// reservations while 64 callers keep reserving it, and reports the audit's
// time and the reserve p99 and worst during the audit against the same
// figures in as long a window right after it. The audit runs off the
// actor (the actor only freezes), so the reserve figures during it should
// stay near those before it. Run with make bench-audit (it needs ~2 GB of
// memory at 8 million); fills are not fsynced.
func BenchmarkAuditDuringSale(b *testing.B) {
	sizes := benchsize.Pick([]int{1_000_000, 4_000_000, 8_000_000}, []int{1_000})
	for _, n := range sizes {
		name := strconv.Itoa(n)
		if n%1_000_000 == 0 {
			name = strconv.Itoa(n/1_000_000) + "M"
		}
		b.Run("reservations="+name, func(b *testing.B) { benchAuditDuringSale(b, n) })
	}
}

func benchAuditDuringSale(b *testing.B, n int) {
	e, err := Open(Config{DataDir: b.TempDir(), Fsync: wal.FsyncNeverBenchmarkOnly, ExpiryInterval: time.Hour,
		Logger: quiet, SnapshotEvery: -1, SnapshotInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	now := time.Now().UnixMilli()
	d := sku.Definition{CampaignID: "bench", SKUID: "audit", StartAt: now - 1000, EndAt: now + 86_400_000,
		PaymentWindowMs: 3_600_000, SaleLimit: sku.MaxSaleLimit, ReleaseOnClose: true}
	if err := e.Define(context.Background(), d); err != nil {
		b.Fatal(err)
	}
	fill(b, e, "bench", "audit", n, 512)

	var mu sync.Mutex
	phase := 2 // 0: without an audit, 1: during the audit, 2: not measured
	var lat [2][]time.Duration
	var stop atomic.Bool
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				id := "more-" + strconv.FormatInt(next.Add(1), 36)
				start := time.Now()
				if _, err := e.Reserve(context.Background(), "bench", "audit", id, id); err != nil {
					b.Error(err)
					return
				}
				took := time.Since(start)
				mu.Lock()
				if phase < 2 {
					lat[phase] = append(lat[phase], took)
				}
				mu.Unlock()
			}
		}()
	}
	var auditTook time.Duration
	mu.Lock()
	phase = 1
	mu.Unlock()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		a, err := e.Audit(context.Background(), "bench", "audit")
		if err != nil || !a.OK() || a.Counts.Reservations < uint32(n) {
			b.Fatalf("audit: %v %v (%d reservations)", err, a.Violations, a.Counts.Reservations)
		}
		auditTook = max(auditTook, time.Since(start))
	}
	b.StopTimer()
	// The window without an audit is as long as the audit took, measured
	// right after it (in its cool-down: no recount runs) under the same load.
	mu.Lock()
	during := lat[1]
	phase = 0
	mu.Unlock()
	time.Sleep(auditTook)
	mu.Lock()
	phase = 2
	without := lat[0]
	mu.Unlock()
	stop.Store(true)
	wg.Wait()
	p99, worst := quantiles(during)
	p99Without, worstWithout := quantiles(without)
	b.ReportMetric(float64(auditTook.Milliseconds()), "audit-ms")
	b.ReportMetric(p99, "reserve-p99-during-ms")
	b.ReportMetric(worst, "reserve-worst-during-ms")
	b.ReportMetric(p99Without, "reserve-p99-without-ms")
	b.ReportMetric(worstWithout, "reserve-worst-without-ms")
	b.ReportMetric(0, "ns/op")
}

// quantiles returns the p99 and the largest of ds, in ms (0 for none).
func quantiles(ds []time.Duration) (p99, worst float64) {
	if len(ds) == 0 {
		return 0, 0
	}
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return ms(ds[len(ds)*99/100]), ms(ds[len(ds)-1])
}
