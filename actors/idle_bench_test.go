package actors

import (
	"fmt"
	"github.com/seckill/seckill/internal/benchsize"
	"syscall"
	"testing"
	"time"
)

// BenchmarkIdleSKUs: the CPU an engine of many quiet SKUs (defined, one
// pending reservation each, nothing due) burns on its timers, in CPU
// milliseconds per second of wall time, at the default expiry interval.
func BenchmarkIdleSKUs(b *testing.B) {
	skus := benchsize.Pick(2000, 20)
	e, err := Open(Config{DataDir: b.TempDir(), Logger: quiet, SnapshotEvery: -1, SnapshotInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	for i := 0; i < skus; i++ {
		d := testDef(10)
		d.SKUID = fmt.Sprintf("s%d", i)
		d.StartAt, d.EndAt = time.Now().UnixMilli()-1000, time.Now().UnixMilli()+86_400_000
		if err := e.Define(ctxT(b), d); err != nil {
			b.Fatal(err)
		}
		if _, err := e.Reserve(ctxT(b), "c1", d.SKUID, "r", "u"); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(benchsize.Pick(2*time.Second, 10*time.Millisecond)) // the first ticks after the reserves
	b.ResetTimer()
	start, cpu := time.Now(), cpuTime()
	for i := 0; i < b.N; i++ {
		time.Sleep(benchsize.Pick(time.Second, 10*time.Millisecond))
	}
	b.ReportMetric(float64((cpuTime()-cpu).Milliseconds())/time.Since(start).Seconds(), "cpu-ms/s")
	b.ReportMetric(float64(skus), "skus")
}

// cpuTime is this process's user + system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
