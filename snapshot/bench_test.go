package snapshot

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/benchsize"
)

// benchReservations is the size of the benchmarks' Machine.
var benchReservations = benchsize.Pick(1_000_000, 1_000)

var (
	millionOnce    sync.Once
	millionMachine *sku.Machine
)

// million returns a Machine with benchReservations reservations (ids of
// 13-14 bytes): every 4th paid, every 7th cancelled, every 100th paid late
// (a refund), and 10,000 SOLD_OUT rejections.
func million(b *testing.B) *sku.Machine {
	millionOnce.Do(func() {
		m := sku.New()
		now := time.Now().UnixMilli()
		d := sku.Definition{CampaignID: "bench", SKUID: "million", StartAt: now - 1000, EndAt: now + 86_400_000,
			PaymentWindowMs: 900_000, SaleLimit: uint32(benchReservations), ReleaseOnClose: false}
		var out []sku.Record
		m.Define(now, d, out)
		for i := 1; i <= benchReservations; i++ {
			id := strconv.Itoa(i)
			out, _ = reserve(m, now, "req-"+id, "user-"+id, out[:0])
		}
		for seq := uint32(1); seq <= uint32(benchReservations); seq++ {
			switch {
			case seq%4 == 0:
				m.Pay(now, seq, "pay-"+strconv.Itoa(int(seq)), 12_900, out[:0])
			case seq%7 == 0:
				m.Close(now, seq, sku.ReasonCancelled, out[:0])
				if seq%100 == 0 {
					m.Pay(now, seq, "late-"+strconv.Itoa(int(seq)), 12_900, out[:0])
				}
			}
		}
		for i := 0; i < benchsize.Pick(10_000, 10); i++ {
			m.Reserve(now, fmt.Sprintf("late-req-%d", i), fmt.Sprintf("late-user-%d", i), out[:0])
		}
		millionMachine = m
	})
	return millionMachine
}

func reserve(m *sku.Machine, now int64, req, user string, out []sku.Record) ([]sku.Record, sku.Outcome) {
	res, out := m.Reserve(now, req, user, out)
	return out, res.Outcome
}

// BenchmarkWrite1M: one snapshot file of 1,000,000 reservations, fsynced.
func BenchmarkWrite1M(b *testing.B) {
	m := million(b)
	dir := b.TempDir()
	b.ResetTimer()
	var info Info
	for i := 0; i < b.N; i++ {
		var err error
		if info, err = Write(dir, m.Freeze(), uint64(i+1), Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(info.Bytes)/1e6, "MB")
	b.ReportMetric(float64(info.Bytes)/float64(benchReservations), "bytes/reservation")
}

// BenchmarkLoad1M: read, verify and decode that file, rebuilding indexes.
func BenchmarkLoad1M(b *testing.B) {
	m := million(b)
	dir := b.TempDir()
	info, err := Write(dir, m.Freeze(), 1, Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	callgrindLoopStart()
	for i := 0; i < b.N; i++ {
		_, got, err := Read(info.Path)
		if err != nil {
			b.Fatal(err)
		}
		if got.Counts().Reservations != m.Counts().Reservations {
			b.Fatal("lost reservations")
		}
	}
	callgrindLoopEnd()
}

// callgrindLoopStart and callgrindLoopEnd mark BenchmarkLoad1M's loop for
// valgrind --tool=callgrind --zero-before=*callgrindLoopStart
// --dump-before=*callgrindLoopEnd: the loads alone, without the Machine's
// making and the file's writing.
//
//go:noinline
func callgrindLoopStart() {}

//go:noinline
func callgrindLoopEnd() {}

// BenchmarkFreeze1M: the pause a snapshot puts on the actor at 1,000,000
// reservations.
func BenchmarkFreeze1M(b *testing.B) {
	m := million(b)
	b.ResetTimer()
	var worst time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		f := m.Freeze()
		if d := time.Since(start); d > worst {
			worst = d
		}
		_ = f
	}
	b.ReportMetric(float64(worst.Microseconds()), "worst-µs")
}
