package actors

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/benchsize"
	"github.com/seckill/seckill/lottery"
	"github.com/seckill/seckill/recovery"
	"github.com/seckill/seckill/wal"
)

// BenchmarkReserveDurable: one SKU that never sells out, real fsync in a
// temp dir on the data disk, closed-loop callers each waiting for its reply.
// With closed-loop callers, throughput <= callers / latency and latency >=
// one fsync, so the figure that counts is callers=4096.
func BenchmarkReserveDurable(b *testing.B) { benchReserve(b, wal.FsyncAlways) }

// BenchmarkReserveNoSync is the same without fsync: the CPU ceiling.
func BenchmarkReserveNoSync(b *testing.B) { benchReserve(b, wal.FsyncNeverBenchmarkOnly) }

func benchReserve(b *testing.B, mode wal.FsyncMode) {
	for _, callers := range []int{1, 256, 4096} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			e, err := Open(Config{DataDir: b.TempDir(), Fsync: mode, ExpiryInterval: time.Hour, Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			now := time.Now().UnixMilli()
			d := sku.Definition{CampaignID: "bench", SKUID: "hot", StartAt: now - 1000, EndAt: now + 86_400_000,
				PaymentWindowMs: 3_600_000, SaleLimit: sku.MaxSaleLimit, ReleaseOnClose: true}
			if err := e.Define(context.Background(), d); err != nil {
				b.Fatal(err)
			}
			h := e.SKU("bench", "hot")
			before := h.WALStats()
			lat := make([][]time.Duration, callers)
			var wg sync.WaitGroup
			ctx := context.Background()
			b.ResetTimer()
			start := time.Now()
			for g := 0; g < callers; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					mine := make([]time.Duration, 0, b.N/callers+1)
					// Caller g makes reservations g+1, g+1+callers, ...: no
					// shared counter for the callers to fight over.
					for i := int64(g + 1); i <= int64(b.N); i += int64(callers) {
						id := strconv.FormatInt(i, 36)
						t := time.Now()
						res, err := e.Reserve(ctx, "bench", "hot", "r"+id, "u"+id)
						if err != nil || res.Outcome != sku.OutcomeAccepted {
							b.Errorf("reserve: %v %v", res.Outcome, err)
							return
						}
						mine = append(mine, time.Since(t))
					}
					lat[g] = mine
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			after := h.WALStats()
			all := slices.Concat(lat...)
			slices.Sort(all)
			batches := after.Batches - before.Batches
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "reservations/s")
			b.ReportMetric(float64(after.Syncs-before.Syncs)/elapsed.Seconds(), "fsyncs/s")
			if batches > 0 {
				b.ReportMetric(float64(after.Records-before.Records)/float64(batches), "records/batch")
			}
			if len(all) > 0 {
				b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkReplay replays a 1,000,000-record log into a fresh Machine, as
// a restart without a snapshot does.
func BenchmarkReplay(b *testing.B) {
	records := benchsize.Pick(1_000_000, 1_000)
	dir := b.TempDir()
	e, err := Open(Config{DataDir: dir, Fsync: wal.FsyncNeverBenchmarkOnly, ExpiryInterval: time.Hour, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now().UnixMilli()
	d := sku.Definition{CampaignID: "bench", SKUID: "replay", StartAt: now - 1000, EndAt: now + 86_400_000,
		PaymentWindowMs: 3_600_000, SaleLimit: sku.MaxSaleLimit, ReleaseOnClose: true}
	if err := e.Define(context.Background(), d); err != nil {
		b.Fatal(err)
	}
	fill(b, e, "bench", "replay", records-1, 512)
	e.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		l, err := wal.Open(dir+"/bench/replay/wal", wal.Options{})
		if err != nil {
			b.Fatal(err)
		}
		m := sku.New()
		if _, err := recovery.Replay(l, m, l.FirstIndex()); err != nil {
			b.Fatal(err)
		}
		elapsed := time.Since(start)
		l.Close()
		if m.Counts().Reservations != uint32(records-1) {
			b.Fatalf("replayed %d reservations", m.Counts().Reservations)
		}
		b.ReportMetric(float64(records)/elapsed.Seconds(), "records/s")
	}
}

// fill makes n reservations with callers concurrent callers.
func fill(b *testing.B, e *Engine, c, s string, n, callers int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < callers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				id := strconv.FormatInt(i, 36)
				if res, err := e.Reserve(context.Background(), c, s, "request-"+id, "user-"+id); err != nil || res.Outcome != sku.OutcomeAccepted {
					b.Errorf("reserve: %v %v", res.Outcome, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkHeapPerReservation measures the live heap one reservation costs
// in a Machine holding 1,000,000 of them, and, in the same run, the live
// heap one lottery entry costs in a lottery SKU holding 1,000,000 entries
// (request_id and user_id of 15 and 12 bytes, as "request-<base36>" and
// "user-<base36>", in both): heap-bytes/reservation, heap-bytes/entry and
// their ratio entry/reservation (an entry should cost about as much memory
// as a reservation).
func BenchmarkHeapPerReservation(b *testing.B) {
	n := benchsize.Pick(1_000_000, 1_000)
	id := func(j int) string { return strconv.FormatInt(int64(j)+1_000_000_000, 36) }
	for range 1 { // one measurement whatever b.N is: it is a size, not a speed
		perReservation := heapPer(b, n, func() any {
			m := sku.New()
			if _, _, err := m.Define(0, sku.Definition{CampaignID: "c", SKUID: "s", StartAt: 0, EndAt: 1 << 50,
				PaymentWindowMs: sku.MaxPaymentWindowMs, SaleLimit: sku.MaxSaleLimit, ReleaseOnClose: true}, nil); err != nil {
				b.Fatal(err)
			}
			var out []sku.Record
			for j := 1; j <= n; j++ {
				_, out = m.Reserve(int64(j), "request-"+id(j), "user-"+id(j), out[:0])
			}
			if m.Counts().Reservations != uint32(n) {
				b.Fatal("not all reserved")
			}
			return m
		})
		perEntry := heapPer(b, n, func() any {
			m := sku.New()
			// Entries open at the beacon's genesis for 1<<40 ms; the draw's
			// round is the second after the close (published after it, as
			// the rules ask, and before end_at).
			open := int64(lottery.QuicknetGenesis) * 1000
			closeAt := open + 1<<40
			round := uint64((closeAt/1000-lottery.QuicknetGenesis)/lottery.QuicknetPeriod + 2)
			d := sku.Definition{CampaignID: "c", SKUID: "s", StartAt: open, EndAt: 1 << 50,
				PaymentWindowMs: sku.MaxPaymentWindowMs, SaleLimit: 1000,
				Lottery: &sku.LotteryRules{EntriesOpenAt: open, EntriesCloseAt: closeAt,
					Beacon:     lottery.Beacon{Source: lottery.SourceDrandQuicknet, Round: round},
					ServerSeed: lottery.Hash{1}, PseudonymKey: lottery.Hash{2}}}
			if _, _, err := m.Define(open, d, nil); err != nil {
				b.Fatal(err)
			}
			var out []sku.Record
			for j := 1; j <= n; j++ {
				var res sku.EntryResult
				res, out = m.Enter(open+int64(j), "request-"+id(j), "user-"+id(j), sku.Holder{}, out[:0])
				if res.Outcome != sku.OutcomeEntered {
					b.Fatalf("entry %d: %v", j, res.Outcome)
				}
			}
			return m
		})
		b.ReportMetric(perReservation, "heap-bytes/reservation")
		b.ReportMetric(perEntry, "heap-bytes/entry")
		b.ReportMetric(perEntry/perReservation, "entry/reservation")
	}
}

// heapPer returns the live heap fill's result holds, divided by n: the
// heap in use after a GC, less the heap in use before.
func heapPer(b *testing.B, n int, fill func() any) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v := fill()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(v)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}
