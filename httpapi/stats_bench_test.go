package httpapi_test

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/internal/benchsize"
)

// publishedStats is an engine that only publishes figures: the stats and
// activity of SKUs a benchmark made up. Its commands are not there (nil:
// a call panics); the server's sampler never calls them.
type publishedStats struct {
	httpapi.Engine
	stats    []actors.Stats
	activity []actors.Activity
}

func (p publishedStats) AllStats() []actors.Stats       { return p.stats }
func (p publishedStats) AllActivity() []actors.Activity { return p.activity }

// BenchmarkSampleStats is one stats sample (what the server does once a
// second) over 10,000 SKUs as an engine publishes them: the cost of the
// dashboard's rates beside the engine's own work.
func BenchmarkSampleStats(b *testing.B) {
	skus := benchsize.Pick(10_000, 100)
	now := time.Now()
	var e publishedStats // in the order AllStats and AllActivity return
	for i := range skus {
		d := sku.Definition{CampaignID: fmt.Sprintf("c%04d", i/50), SKUID: fmt.Sprintf("s%02d", i%50),
			StartAt: now.Add(-time.Minute).UnixMilli(), EndAt: now.Add(time.Hour).UnixMilli(),
			PaymentWindowMs: 60_000, SaleLimit: 100}
		e.stats = append(e.stats, actors.Stats{CampaignID: d.CampaignID, SKUID: d.SKUID, Definition: &d,
			Counts: sku.Counts{SaleLimit: d.SaleLimit, Available: d.SaleLimit}})
		e.activity = append(e.activity, actors.Activity{CampaignID: d.CampaignID, SKUID: d.SKUID, DurableIndex: 1, LastIndex: 1})
	}
	srv, err := httpapi.New(httpapi.Config{Engine: e, AdminToken: testToken, StatsInterval: -1,
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
