package actors

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/wal"
)

// BenchmarkSeedSaleFiveSKUs is the seed sale on a campaign of 5 SKUs
// (10,000 units, 2,000 each) with purchase_limit "sku" beside the same sale
// with "campaign", in one run: b.N buyers, 256 callers, each buyer
// clicking one SKU (clicks=1: what the purchase registry costs a sale) or
// two SKUs of the campaign at once (clicks=2, the red and the blue phone:
// with campaign scope the second click waits for the first's answer). It
// reports clicks/s, the click latency and how many units went; with
// campaign scope no buyer gets two. fsync=never is the CPU's figure,
// fsync=always the durable one. cpu-ns/click is the process's CPU time
// (user + system) per click: on a machine shared with other jobs it varies
// far less than the rates.
func BenchmarkSeedSaleFiveSKUs(b *testing.B) {
	for _, mode := range []struct {
		name  string
		fsync wal.FsyncMode
	}{{"never", wal.FsyncNeverBenchmarkOnly}, {"always", wal.FsyncAlways}} {
		for _, clicks := range []int{1, 2} {
			for _, scope := range []sku.PurchaseLimit{sku.PurchaseLimitSKU, sku.PurchaseLimitCampaign} {
				b.Run(fmt.Sprintf("fsync=%s/clicks=%d/scope=%s", mode.name, clicks, scope), func(b *testing.B) {
					benchSeedSale(b, mode.fsync, clicks, scope)
				})
			}
		}
	}
}

func benchSeedSale(b *testing.B, mode wal.FsyncMode, clicks int, scope sku.PurchaseLimit) {
	const callers, skus = 256, 5
	e, err := Open(Config{DataDir: b.TempDir(), Fsync: mode, ExpiryInterval: time.Hour, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	now := time.Now().UnixMilli()
	for s := 1; s <= skus; s++ {
		d := sku.Definition{CampaignID: "seed", SKUID: fmt.Sprintf("s%d", s), StartAt: now - 1000, EndAt: now + 86_400_000,
			PaymentWindowMs: 3_600_000, SaleLimit: 2_000, ReleaseOnClose: true, PurchaseLimit: scope}
		if err := e.Define(context.Background(), d); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([][]time.Duration, callers)
	sold := make([]int, callers)
	held := make([]int, callers) // buyers with two units
	var wg sync.WaitGroup
	ctx := context.Background()
	b.ResetTimer()
	cpuStart := processCPU()
	start := time.Now()
	for g := 0; g < callers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make([]time.Duration, 0, 2*(b.N/callers+1))
			for i := g + 1; i <= b.N; i += callers {
				id := strconv.Itoa(i)
				first, second := i%skus+1, (i/skus+i)%(skus-1)+1
				if second >= first {
					second++
				}
				var both sync.WaitGroup
				var accepted [2]bool
				var took [2]time.Duration
				for k, s := range []int{first, second}[:clicks] {
					both.Add(1)
					go func() {
						defer both.Done()
						t := time.Now()
						res, err := e.Reserve(ctx, "seed", "s"+strconv.Itoa(s), "r"+id+"-"+strconv.Itoa(k), "u"+id)
						if err != nil && err != ErrBusy {
							b.Errorf("reserve: %v", err)
						}
						accepted[k] = err == nil && res.Outcome == sku.OutcomeAccepted
						took[k] = time.Since(t)
					}()
				}
				both.Wait()
				mine = append(mine, took[:clicks]...)
				for _, a := range accepted {
					if a {
						sold[g]++
					}
				}
				if accepted[0] && accepted[1] {
					held[g]++
				}
			}
			lat[g] = mine
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := processCPU() - cpuStart
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	units, doubles := 0, 0
	for g := range sold {
		units += sold[g]
		doubles += held[g]
	}
	if scope == sku.PurchaseLimitCampaign && doubles > 0 {
		b.Fatalf("%d buyers got two units with campaign scope", doubles)
	}
	b.ReportMetric(float64(clicks*b.N)/elapsed.Seconds(), "clicks/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(clicks*b.N), "cpu-ns/click")
	b.ReportMetric(float64(units), "units")
	b.ReportMetric(float64(doubles), "buyers-with-two")
	if len(all) > 0 {
		b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
	}
	b.ReportMetric(0, "ns/op")
}

// processCPU returns the CPU time (user + system) this process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
