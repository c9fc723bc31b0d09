package wal

import (
	"github.com/seckill/seckill/internal/benchsize"
	"testing"
	"time"
)

// BenchmarkReadDurable reads a 1,000,000-record log (~60-byte payloads, the
// size of a reservation) from its segment files in pages of 1,000, as the
// event feed does: records/s for one reader.
func BenchmarkReadDurable(b *testing.B) {
	records := benchsize.Pick(1_000_000, 1_000)
	l := openLog(b, b.TempDir(), Options{Fsync: FsyncNeverBenchmarkOnly})
	defer l.Close()
	payload := testPayload(1)
	for i := 0; i < records; i++ {
		if _, err := l.Append(2, payload); err != nil {
			b.Fatal(err)
		}
	}
	if err := awaitDurable(b, l, uint64(records)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	read := 0
	for b.Loop() {
		for from := uint64(1); from <= uint64(records); {
			next, err := l.ReadDurable(from, 1000, func(uint64, byte, []byte) error { read++; return nil })
			if err != nil {
				b.Fatal(err)
			}
			from = next
		}
	}
	b.ReportMetric(float64(read)/time.Since(start).Seconds(), "records/s")
}
