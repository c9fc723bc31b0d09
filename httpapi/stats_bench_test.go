package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/httpapi/memengine"
	"github.com/seckill/seckill/internal/benchsize"
)

// BenchmarkSampleStats is one stats sample (what the server does once a
// second) over 10,000 SKUs of the in-memory twin: the cost of the
// dashboard's rates beside the engine's own work.
func BenchmarkSampleStats(b *testing.B) {
	skus := benchsize.Pick(10_000, 100)
	twin := memengine.New(memengine.Config{MaxSKUs: skus})
	now := time.Now()
	for i := range skus {
		d := sku.Definition{CampaignID: fmt.Sprintf("c%d", i/50), SKUID: fmt.Sprintf("s%d", i%50),
			StartAt: now.Add(-time.Minute).UnixMilli(), EndAt: now.Add(time.Hour).UnixMilli(),
			PaymentWindowMs: 60_000, SaleLimit: 100}
		if err := twin.Define(context.Background(), d); err != nil {
			b.Fatal(err)
		}
	}
	srv, err := httpapi.New(httpapi.Config{Engine: twin, AdminToken: testToken, StatsInterval: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	at := time.Unix(1_000_000, 0)
	srv.SampleStats(at)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		srv.SampleStats(at.Add(time.Duration(i+1) * time.Second))
	}
}
