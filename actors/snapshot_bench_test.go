package actors

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/benchsize"
	"github.com/seckill/seckill/wal"
)

// benchSnapshotReservations is the size of the SKU of the snapshot
// benchmarks.
var benchSnapshotReservations = benchsize.Pick(1_000_000, 1_000)

// openMillion opens an engine on dir (no fsync, no automatic snapshots)
// and, if the SKU is new, fills it with benchSnapshotReservations
// reservations.
func openMillion(b *testing.B, dir string) *Engine {
	e, err := Open(Config{DataDir: dir, Fsync: wal.FsyncNeverBenchmarkOnly, ExpiryInterval: time.Hour,
		Logger: quiet, SnapshotEvery: -1, SnapshotInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	if e.SKU("bench", "million") != nil {
		return e
	}
	now := time.Now().UnixMilli()
	d := sku.Definition{CampaignID: "bench", SKUID: "million", StartAt: now - 1000, EndAt: now + 86_400_000,
		PaymentWindowMs: 3_600_000, SaleLimit: sku.MaxSaleLimit, ReleaseOnClose: true}
	if err := e.Define(context.Background(), d); err != nil {
		b.Fatal(err)
	}
	fill(b, e, "bench", "million", benchSnapshotReservations, 512)
	return e
}

// BenchmarkSnapshotPause1M takes a snapshot of a SKU holding 1,000,000
// live reservations while 64 callers reserve and pay (pays hit old rows,
// so chunks are copied on write during the snapshot). It reports the
// actor's pause (the freeze), the whole snapshot time, and the worst
// reserve/pay latency seen during the snapshot against the worst in as
// long a window before it. The target is a pause under 50 ms.
func BenchmarkSnapshotPause1M(b *testing.B) {
	e := openMillion(b, b.TempDir())
	defer e.Close()
	ctx := context.Background()
	var worst [2]atomic.Int64 // ns: before, during
	var phase atomic.Int32
	var stop atomic.Bool
	var next atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := e.SKU("bench", "million").Stats().Definition.IDKey
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for !stop.Load() {
				start := time.Now()
				var err error
				if i := next.Add(1); i%4 == 0 {
					seq := uint32(rng.IntN(benchSnapshotReservations) + 1)
					_, err = e.Pay(ctx, sku.FormatReservationID("bench", "million", seq, key), "pay-"+strconv.FormatInt(i, 36), 100)
				} else {
					id := "more-" + strconv.FormatInt(i, 36)
					_, err = e.Reserve(ctx, "bench", "million", id, id)
				}
				if err != nil {
					b.Error(err)
					return
				}
				d := int64(time.Since(start))
				w := &worst[phase.Load()]
				for old := w.Load(); d > old && !w.CompareAndSwap(old, d); old = w.Load() {
				}
			}
		}()
	}
	var pause, took time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		phase.Store(0)
		time.Sleep(benchsize.Pick(300*time.Millisecond, 10*time.Millisecond))
		phase.Store(1)
		info, err := e.Snapshot(ctx, "bench", "million")
		if err != nil {
			b.Fatal(err)
		}
		pause, took = max(pause, info.Pause), max(took, info.Took)
	}
	b.StopTimer()
	stop.Store(true)
	wg.Wait()
	b.ReportMetric(float64(pause.Microseconds())/1000, "freeze-ms")
	b.ReportMetric(float64(took.Milliseconds()), "snapshot-ms")
	b.ReportMetric(float64(worst[0].Load())/1e6, "worst-call-before-ms")
	b.ReportMetric(float64(worst[1].Load())/1e6, "worst-call-during-ms")
}

// BenchmarkStartWithSnapshot1M: time from Open to ready for a SKU whose
// newest snapshot holds 1,000,000 reservations, with 10,000 records after
// it in the log. The target is 2 s.
func BenchmarkStartWithSnapshot1M(b *testing.B) {
	dir := b.TempDir()
	e := openMillion(b, dir)
	if _, err := e.Snapshot(context.Background(), "bench", "million"); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	tail := benchsize.Pick(10_000, 100)
	for i := 0; i < tail; i++ {
		id := "tail-" + strconv.Itoa(i)
		if _, err := e.Reserve(ctx, "bench", "million", id, id); err != nil {
			b.Fatal(err)
		}
	}
	e.Close()
	b.ResetTimer()
	var worst time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		e := openMillion(b, dir)
		took := time.Since(start)
		worst = max(worst, took)
		if n := e.SKU("bench", "million").Stats().Counts.Reservations; n != uint32(benchSnapshotReservations+tail) {
			b.Fatalf("%d reservations after start", n)
		}
		b.StopTimer()
		e.Close()
		b.StartTimer()
	}
	b.ReportMetric(worst.Seconds(), "worst-start-s")
}
