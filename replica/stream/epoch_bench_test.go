package stream

import (
	"fmt"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/benchsize"
	"github.com/seckill/seckill/internal/skudir"
	"github.com/seckill/seckill/wal"
)

// BenchmarkBeginEpoch measures what a promotion spends beginning its
// epoch in every SKU's history (BeginEpoch: a history file fsynced with
// its folder per SKU) over a data dir of many SKUs, one SKU at a time and
// as BeginEpoch runs them, in the same run, and reports the ratio: the
// set serves nobody meanwhile.
func BenchmarkBeginEpoch(b *testing.B) {
	skus := benchsize.Pick(500, 10)
	dir := b.TempDir()
	for i := range skus {
		l, err := wal.Open(skudir.Dir(fmt.Sprintf("%s/c/s%04d", dir, i)).WAL(), wal.Options{Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := l.Append(1, []byte("x")); err != nil {
			b.Fatal(err)
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
	}
	epoch := uint64(0)
	begin := func(workers int) time.Duration {
		epoch++
		start := time.Now()
		if err := beginEpoch(dir, epoch, quiet, workers); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	for i := 0; i < b.N; i++ {
		// One at a time before and after: the machine's drift falls on both.
		one := begin(1)
		many := begin(skudir.AtOnce)
		one = (one + begin(1)) / 2
		b.ReportMetric(float64(one.Milliseconds()), "one_at_a_time_ms")
		b.ReportMetric(float64(many.Milliseconds()), "begin_epoch_ms")
		b.ReportMetric(one.Seconds()/many.Seconds(), "speedup")
		fmt.Printf("begin epoch over %d SKUs: one at a time %v, %d at once %v, %.1fx\n",
			skus, one.Round(time.Millisecond), skudir.AtOnce, many.Round(time.Millisecond), one.Seconds()/many.Seconds())
	}
}
