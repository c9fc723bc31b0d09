package wal

import (
	"testing"
	"time"
)

// BenchmarkReadDurable reads a 1,000,000-record log (~60-byte payloads, the
// size of a reservation) from its segment files in pages of 1,000, as the
// event feed does: records/s for one reader.
func BenchmarkReadDurable(b *testing.B) {
	const records = 1_000_000
	l := openLog(b, b.TempDir(), Options{Fsync: FsyncNeverBenchmarkOnly})
	defer l.Close()
	payload := testPayload(1)
	for i := 0; i < records; i++ {
		if _, err := l.Append(2, payload); err != nil {
			b.Fatal(err)
		}
	}
	if err := awaitDurable(b, l, records); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	read := 0
	for b.Loop() {
		for from := uint64(1); from <= records; {
			next, err := l.ReadDurable(from, 1000, func(uint64, byte, []byte) error { read++; return nil })
			if err != nil {
				b.Fatal(err)
			}
			from = next
		}
	}
	b.ReportMetric(float64(read)/time.Since(start).Seconds(), "records/s")
}
