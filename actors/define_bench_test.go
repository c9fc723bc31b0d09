package actors

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/benchsize"
	"github.com/seckill/seckill/wal"
)

// benchDefineSKUs is the size of the campaign BenchmarkDefineCampaign
// defines.
var benchDefineSKUs = benchsize.Pick(300, 4)

// BenchmarkDefineCampaign defines campaigns of benchDefineSKUs SKUs as a
// campaign PUT does (MakeRoom, the list, its release), fsync on: "new"
// creates each campaign's SKUs (folder, log, first definition), "raise"
// redefines them (sale_limit raised: one record each). It prints SKUs/s.
func BenchmarkDefineCampaign(b *testing.B) {
	for _, raise := range []bool{false, true} {
		name := "new"
		if raise {
			name = "raise"
		}
		b.Run(name, func(b *testing.B) {
			e, err := Open(Config{DataDir: b.TempDir(), Fsync: wal.FsyncAlways, ExpiryInterval: time.Hour, Logger: quiet,
				MaxSKUs: 1_000_000})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			now := time.Now().UnixMilli()
			campaign := func(i int, saleLimit uint32) []sku.Definition {
				defs := make([]sku.Definition, benchDefineSKUs)
				for j := range defs {
					defs[j] = sku.Definition{CampaignID: "c" + strconv.Itoa(i), SKUID: "s" + strconv.Itoa(j),
						StartAt: now - 1000, EndAt: now + 86_400_000, PaymentWindowMs: 60_000,
						SaleLimit: saleLimit, ReleaseOnClose: true}
				}
				return defs
			}
			if raise {
				benchDefine(b, e, campaign(0, 1))
			}
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				if raise {
					benchDefine(b, e, campaign(0, uint32(2+i)))
				} else {
					benchDefine(b, e, campaign(i, 1))
				}
			}
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N*benchDefineSKUs)/elapsed.Seconds(), "SKUs/s")
		})
	}
}

// benchDefine defines defs as a campaign PUT does.
func benchDefine(b *testing.B, e *Engine, defs []sku.Definition) {
	release, err := e.MakeRoom(defs)
	if err != nil {
		b.Fatal(err)
	}
	for _, err := range e.DefineAll(context.Background(), defs, 0) {
		if err != nil {
			release(true)
			b.Fatal(err)
		}
	}
	release(false)
}
