package wal

import (
	"github.com/seckill/seckill/internal/benchsize"
	"sync/atomic"
	"testing"
	"time"
)

// countingWaiter counts releases without allocating per waiter.
type countingWaiter struct{ released, failed atomic.Uint64 }

func (w *countingWaiter) Durable(err error) {
	if err != nil {
		w.failed.Add(1)
	}
	w.released.Add(1)
}

// BenchmarkAppendDurable: one appender goroutine (the actor) appends ~60-byte
// records and registers a waiter for each, with real fsyncs; group commit
// makes the batches. Reports acknowledged records/s, fsyncs/s and the mean
// batch size (records per fsync).
func BenchmarkAppendDurable(b *testing.B) {
	l := openLog(b, b.TempDir(), Options{})
	payload := testPayload(1)
	waiter := &countingWaiter{}
	b.ReportAllocs()
	start := time.Now()
	var records uint64
	for b.Loop() {
		index, err := l.Append(2, payload)
		if err != nil {
			b.Fatal(err)
		}
		l.Await(index, waiter)
		records++
	}
	if err := awaitDurable(b, l, l.LastIndex()); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	stats := l.Stats()
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	if waiter.released.Load() != records || waiter.failed.Load() != 0 {
		b.Fatalf("%d of %d released, %d failed", waiter.released.Load(), records, waiter.failed.Load())
	}
	b.ReportMetric(float64(records)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(stats.Syncs)/elapsed.Seconds(), "fsyncs/s")
	b.ReportMetric(float64(stats.Records)/float64(max(stats.Syncs, 1)), "records/fsync")
	b.ReportMetric(float64(stats.SyncTime.Microseconds())/float64(max(stats.Syncs, 1)), "µs/fsync")
}

// BenchmarkAppend measures the cost of Append alone (no fsync): the framing,
// CRC and copy into the pending batch.
func BenchmarkAppend(b *testing.B) {
	l := openLog(b, b.TempDir(), Options{Fsync: FsyncNeverBenchmarkOnly})
	defer l.Close()
	payload := testPayload(1)
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		if _, err := l.Append(2, payload); err != nil {
			b.Fatal(err)
		}
	}
}

// replayRecords is the size of BenchmarkReplay's log.
var replayRecords = benchsize.Pick[uint64](1_000_000, 1_000)

// BenchmarkReplay replays 1,000,000 records of ~60-byte payloads from a
// reopened log (default 20 MiB segments, about 4 of them), validating every
// frame. Reports records/s.
func BenchmarkReplay(b *testing.B) {
	dir := b.TempDir()
	l := openLog(b, dir, Options{Fsync: FsyncNeverBenchmarkOnly})
	for i := uint64(1); i <= replayRecords; i++ {
		if _, err := l.Append(testType(i), testPayload(i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	l = openLog(b, dir, Options{Fsync: FsyncNeverBenchmarkOnly})
	defer l.Close()
	b.ReportAllocs()
	var total uint64
	start := time.Now()
	for b.Loop() {
		var count, bytes uint64
		err := l.Replay(0, func(index uint64, typ byte, payload []byte) error {
			count++
			bytes += uint64(len(payload))
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		if count != replayRecords {
			b.Fatalf("replayed %d records", count)
		}
		total += count
	}
	b.ReportMetric(float64(total)/time.Since(start).Seconds(), "records/s")
}

func BenchmarkDecodeFrame(b *testing.B) {
	frame, _ := AppendFrame(nil, 2, 12345, testPayload(1))
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if _, _, _, err := DecodeFrame(frame); err != nil {
			b.Fatal(err)
		}
	}
}
