package compare

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/bench"
)

// A short entry-pass comparison through a seckilld the test builds: every
// round, warm-up included, answers each reserve 202 and the server holds
// exactly the round's attempts; the counted pairs get their ratios and
// the medians are the pairs'. Its speed is not checked.
func TestPassComparisonBookkeeping(t *testing.T) {
	binary := buildSeckilld(t)
	ctx, cancel := context.WithTimeout(context.Background(), hangBound)
	defer cancel()
	options := PassOptions{Pairs: 3, Warmup: 1, Attempts: 300, Concurrency: 8, RoundTimeout: time.Minute, QuietCores: 0.1}
	report, err := RunPasses(ctx, SeckilldOptions{Binary: binary, WorkDir: t.TempDir()}, options, testWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	if !report.Correct {
		t.Errorf("report not correct")
	}
	wantOrder := []string{ArmPass, ArmPlain, ArmPlain, ArmPass, ArmPass, ArmPlain, ArmPlain, ArmPass} // warm-up pair 0, pairs 1-3
	if len(report.Rounds) != len(wantOrder) {
		t.Fatalf("%d rounds, want %d", len(report.Rounds), len(wantOrder))
	}
	for i, round := range report.Rounds {
		if round.Arm != wantOrder[i] || round.Pair != i/2 {
			t.Errorf("round %d: pair %d %s, want pair %d %s", i, round.Pair, round.Arm, i/2, wantOrder[i])
		}
		if !round.Correct || round.Requests != 300 || round.Answered202 != 300 || round.Accepted != 300 || round.Sold != 300 {
			t.Errorf("round %d: %+v, want 300 requests, all 202, 300 distinct reservations, 300 sold", i, round)
		}
		if round.ThroughputRPS <= 0 || round.ServerCPUS < 0 || round.ClientCPUPerReserveUS <= 0 {
			t.Errorf("round %d: throughput %.0f, server CPU %.2f s, client %.1f µs: not measured", i, round.ThroughputRPS, round.ServerCPUS, round.ClientCPUPerReserveUS)
		}
	}
	if len(report.Pairs) != 3 {
		t.Fatalf("%d pairs, want 3 (the warm-up left out): %+v", len(report.Pairs), report.Pairs)
	}
	var throughput []float64
	for i, pair := range report.Pairs {
		plain, pass := report.Rounds[2+2*i], report.Rounds[3+2*i]
		if plain.Arm != ArmPlain {
			plain, pass = pass, plain
		}
		if want := pass.ThroughputRPS / plain.ThroughputRPS; pair.Pair != i+1 || math.Abs(pair.ThroughputRatio-want) > 1e-9 {
			t.Errorf("pair %d: %+v, want pair %d with throughput ratio %f", i, pair, i+1, want)
		}
		throughput = append(throughput, pair.ThroughputRatio)
	}
	if report.MedianThroughputRatio != median(throughput) || report.MedianThroughputRatio <= 0 || report.MedianClientCPURatio <= 0 {
		t.Errorf("medians %f %f %f from pairs %+v", report.MedianThroughputRatio, report.MedianServerCPURatio, report.MedianClientCPURatio, report.Pairs)
	}
	var out strings.Builder
	WritePassReport(&out, report)
	if !strings.Contains(out.String(), "median") || !strings.Contains(out.String(), "target (reserve throughput") {
		t.Errorf("report text:\n%s", out.String())
	}
}

// The probe tells a campaign that requires passes from one that does not:
// the pass arm would otherwise measure a server that checks nothing.
func TestProbePassRequired(t *testing.T) {
	binary := buildSeckilld(t)
	ctx, cancel := context.WithTimeout(context.Background(), hangBound)
	defer cancel()
	keys, err := randomPassKeys()
	if err != nil {
		t.Fatal(err)
	}
	target := NewSeckilldTarget(SeckilldOptions{Binary: binary, WorkDir: t.TempDir(), EntryPassKeys: keys})
	defer func() {
		if err := target.Close(); err != nil {
			t.Error(err)
		}
	}()
	if err := target.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, required := range []bool{false, true} {
		sku := SKURef{CampaignID: "probe-" + map[bool]string{false: "open", true: "passes"}[required], SKUID: "sku-1", SaleLimit: 10}
		var entryPass *bench.EntryPassSpec
		if required {
			entryPass = &bench.EntryPassSpec{Required: true}
		}
		reserver, err := prepareHTTP(ctx, target.client, sku, time.Minute, entryPass)
		if err != nil {
			t.Fatal(err)
		}
		err = probePassRequired(ctx, reserver)
		if required && err != nil || !required && err == nil {
			t.Errorf("required %v: probe %v", required, err)
		}
	}
}

func TestMedianAndPairs(t *testing.T) {
	for _, c := range []struct {
		values []float64
		want   float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.values); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.values, got, c.want)
		}
	}
	rounds := []PassRound{
		{Pair: 0, Arm: ArmPlain, ThroughputRPS: 1, ServerCPUPerReserveUS: 1, ClientCPUPerReserveUS: 1},
		{Pair: 0, Arm: ArmPass, ThroughputRPS: 9, ServerCPUPerReserveUS: 9, ClientCPUPerReserveUS: 9},
		{Pair: 1, Arm: ArmPass, ThroughputRPS: 90, ServerCPUPerReserveUS: 22, ClientCPUPerReserveUS: 30, ElapsedS: 10, OtherCPUS: 0.5},
		{Pair: 1, Arm: ArmPlain, ThroughputRPS: 100, ServerCPUPerReserveUS: 20, ClientCPUPerReserveUS: 20, ElapsedS: 10, OtherCPUS: 1},
		{Pair: 2, Arm: ArmPlain, ThroughputRPS: 100, ServerCPUPerReserveUS: 20, ClientCPUPerReserveUS: 20, ElapsedS: 10, OtherCPUS: 2},
		{Pair: 2, Arm: ArmPass, ThroughputRPS: 100, ServerCPUPerReserveUS: -1, ClientCPUPerReserveUS: 30, ElapsedS: 10, OtherCPUS: 0},
		{Pair: 3, Arm: ArmPlain, ThroughputRPS: 100, ServerCPUPerReserveUS: -1},
	}
	var report PassReport
	report.Rounds = rounds
	report.summarize(0.1)
	want := []PassPair{
		{Pair: 1, ThroughputRatio: 0.9, ServerCPURatio: 1.1, ClientCPURatio: 1.5, Quiet: true},
		{Pair: 2, ThroughputRatio: 1, ServerCPURatio: 0, ClientCPURatio: 1.5, Quiet: false}, // 0.2 of a core besides: not quiet
	}
	if !slices.Equal(report.Pairs, want) {
		t.Fatalf("pairs %+v, want %+v (the warm-up and the incomplete pair 3 left out)", report.Pairs, want)
	}
	if report.MedianThroughputRatio != 0.95 || report.MedianServerCPURatio != 1.1 || report.MedianClientCPURatio != 1.5 {
		t.Errorf("medians %+v, want 0.95 1.1 1.5 (an unreadable CPU ratio left out)", report)
	}
	if report.QuietPairs != 1 || report.QuietMedianThroughputRatio != 0.9 || report.QuietMedianServerCPURatio != 1.1 {
		t.Errorf("quiet medians %+v, want pair 1's", report)
	}
}
