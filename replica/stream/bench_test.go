package stream

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/benchsize"
)

// BenchmarkReserveReplicated measures reservations through the engine,
// closed-loop callers on one hot SKU with real fsync, unreplicated and
// then as a primary that waits for one standby over loopback, in the same
// run, and reports the ratio: the price of a second copy on disk before
// every reply. Both replicas share this machine's disk and cores, so the
// ratio is pessimistic against two machines.
func BenchmarkReserveReplicated(b *testing.B) {
	count := benchsize.Pick(20_000, 200)
	const callers = 64
	for i := 0; i < b.N; i++ {
		// Unreplicated before and after: the machine's drift (page cache,
		// other load) falls on both sides.
		plain := measureReserves(b, false, count, callers)
		replicated := measureReserves(b, true, count, callers)
		plain = (plain + measureReserves(b, false, count, callers)) / 2
		b.ReportMetric(plain, "unreplicated_reservations/s")
		b.ReportMetric(replicated, "replicated_reservations/s")
		b.ReportMetric(replicated/plain, "replicated/unreplicated")
		fmt.Printf("reserve c=%d: unreplicated %.0f/s, replicated (1 sync standby) %.0f/s, ratio %.2f\n",
			callers, plain, replicated, replicated/plain)
	}
}

// measureReserves returns reservations per second over count
// reservations by callers closed-loop callers.
func measureReserves(b *testing.B, replicated bool, count, callers int) float64 {
	var e *actors.Engine
	if replicated {
		n := startPrimary(b, b.TempDir(), 1, nodeOptions{})
		sb := startStandby(b, b.TempDir(), "b", n.addr)
		define(b, n.engine, "bench", "hot")
		eventually(b, "the standby caught up", func() bool { return status(n.primary, "b").CaughtUp })
		n.primary.Wait([]string{"b"})
		defer func() { n.stop(); sb.Close() }()
		e = n.engine
	} else {
		var err error
		e, err = actors.Open(actors.Config{DataDir: b.TempDir(), Logger: quiet, ExpiryInterval: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		defer e.Close()
		define(b, e, "bench", "hot")
	}
	var wg sync.WaitGroup
	start := time.Now()
	for g := 0; g < callers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < count; i += callers {
				id := strconv.Itoa(i)
				res, err := e.Reserve(context.Background(), "bench", "hot", "r"+id, "u"+id)
				if err != nil || res.Outcome != sku.OutcomeAccepted {
					b.Errorf("reserve: %v %v", res.Outcome, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return float64(count) / time.Since(start).Seconds()
}
