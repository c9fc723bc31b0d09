package compare

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/seckill/seckill/bench"
	"github.com/seckill/seckill/internal/testbin"
)

// requireBaselinesVariable names the environment variable that, set to 1
// (as .ci/run sets it), makes a missing redis-server or PostgreSQL a test
// failure instead of a skip.
const requireBaselinesVariable = "SECKILL_REQUIRE_BASELINES"

// hangBound bounds a test's run against its servers: a bound for one that
// hangs, not a time the test counts on (a loaded machine takes longer).
const hangBound = 5 * time.Minute

// sellOut starts target (skipping the test when its program is missing,
// failing it under SECKILL_REQUIRE_BASELINES=1),
// sends 1,000 attempts (with repeat clicks and retries) for 100 units and
// checks that exactly 100 were sold, once per user, and that the target's
// own state agrees. With batch > 1 the attempts go batch at a time
// (the target must take batches).
func sellOut(t *testing.T, target Target, batch ...int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangBound)
	defer cancel()
	if err := target.Start(ctx); err != nil {
		_ = target.Close()
		if isUnavailable(err) {
			if os.Getenv(requireBaselinesVariable) == "1" {
				t.Fatalf("%v (%s=1: every baseline must run)", err, requireBaselinesVariable)
			}
			t.Skip(err)
		}
		t.Fatal(err)
	}
	defer func() {
		if err := target.Close(); err != nil {
			t.Error(err)
		}
	}()
	sku := SKURef{CampaignID: "test-" + target.Name(), SKUID: "sku-1", SaleLimit: 100}
	reserver, err := target.Prepare(ctx, sku)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := bench.NewPlan(bench.PlanSpec{Attempts: 1000, Users: 1000, RepeatShare: 0.05, RetryShare: 0.05, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	ledger := bench.NewLedger(plan)
	tally := bench.NewTally(8, ledger, 1)
	_, err = bench.RunLoad(ctx, bench.LoadSpec{
		Plan: plan, Reservers: []bench.Reserver{reserver}, Concurrency: 16, RequestIDPrefix: sku.CampaignID, Batch: append(batch, 0)[0],
		Resend: bench.ResendPolicy{Uncertain: true, MaxResends: 5, MinBackoff: time.Millisecond, MaxBackoff: 100 * time.Millisecond},
	}, tally)
	if err != nil {
		t.Fatal(err)
	}
	counts := tally.Counts()
	if counts[bench.OutcomeError] > 0 {
		t.Errorf("%d errors: %v", counts[bench.OutcomeError], tally.ErrorKinds())
	}
	report := ledger.Check(1, func(int) int64 { return sku.SaleLimit }, 0)
	if report.Accepted != 100 || report.Oversold != 0 || report.DuplicateWinners != 0 || report.RetryMismatches != 0 {
		t.Errorf("ledger: accepted %d oversold %d duplicate winners %d retry mismatches %d; %v",
			report.Accepted, report.Oversold, report.DuplicateWinners, report.RetryMismatches, report.Examples)
	}
	if counts[bench.OutcomeSoldOut] == 0 {
		t.Errorf("no SOLD_OUT among 1,000 attempts for 100 units")
	}
	audit, err := target.Audit(ctx, sku)
	if err != nil {
		t.Fatal(err)
	}
	if !audit.Consistent || audit.Sold != 100 || audit.Available != 0 || audit.DuplicateUsers != 0 {
		t.Errorf("audit %+v, want exactly 100 sold, none left, consistent", audit)
	}
	ok, verdict := judgeCell(scenarioSeed, sku, plan, tally, report, audit)
	if !ok {
		t.Errorf("verdict: %s", verdict)
	}
	if _, inProcess := target.(*EngineTarget); inProcess {
		return
	}
	// /proc counts CPU in clock ticks (10 ms): 1,000 attempts may cost
	// Redis less than one (a run read "server CPU 0s"), so the cell needs
	// a reading, not a positive one.
	if cpu, known := target.ServerCPU(); !known || cpu < 0 {
		t.Errorf("server CPU %v (known %v)", cpu, known)
	}
}

// The batch cells' targets sell exactly the stock in batches too: Redis
// pipelined, seckilld's batch reserve, the engine's batch.
func TestBatchTargetsSellExactlyTheStock(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		sellOut(t, NewRedisTarget(RedisOptions{WorkDir: t.TempDir(), PoolSize: 32}), 16)
	})
	t.Run("seckilld", func(t *testing.T) {
		sellOut(t, NewSeckilldTarget(SeckilldOptions{Binary: buildSeckilld(t), WorkDir: t.TempDir()}), 16)
	})
	t.Run("engine", func(t *testing.T) {
		target := NewEngineTarget(t.TempDir())
		sellOut(t, target, 16)
	})
}

func TestRedisBaselineSellsExactlyTheStock(t *testing.T) {
	sellOut(t, NewRedisTarget(RedisOptions{WorkDir: t.TempDir(), PoolSize: 32}))
}

func TestPostgresBaselineSellsExactlyTheStock(t *testing.T) {
	// The default work dir (the system's temp dir) is one the "postgres"
	// user can reach when the test runs as root; t.TempDir() is not.
	sellOut(t, NewPostgresTarget(PostgresOptions{PoolSize: 16}))
}

func TestSeckilldTargetSellsExactlyTheStock(t *testing.T) {
	sellOut(t, NewSeckilldTarget(SeckilldOptions{Binary: buildSeckilld(t), WorkDir: t.TempDir()}))
}

// buildSeckilld builds cmd/seckilld and returns its path (buildCommand).
func buildSeckilld(t *testing.T) string {
	t.Helper()
	return buildCommand(t, "seckilld")
}

// nullCommand builds cmd/seckill-bench and returns the command line of
// its null server (NullTarget.Command).
func nullCommand(t *testing.T) []string {
	t.Helper()
	return []string{buildCommand(t, "seckill-bench"), "null-server"}
}

// buildCommand builds cmd/<name> once for all the tests of the package
// (testbin), with -race when this test binary was built with it, so that
// the packages compiled for the test are reused, and returns its path.
func buildCommand(t *testing.T, name string) string {
	t.Helper()
	return testbin.Build(t, "github.com/seckill/seckill/cmd/"+name, testbin.Race()...)
}

// TestMain builds each command once for all the tests (testbin).
func TestMain(m *testing.M) { testbin.Main(m) }

// Outside CI, compare skips a target whose program is missing and says so.
func TestMissingSeckilldIsSkippedNotFailed(t *testing.T) {
	target := NewSeckilldTarget(SeckilldOptions{Binary: "/nonexistent/seckilld"})
	err := target.Start(context.Background())
	if !isUnavailable(err) {
		t.Fatalf("start of a missing binary: %v, want ErrUnavailable", err)
	}
	if err := target.Close(); err != nil {
		t.Error(err)
	}
	rows, _ := RunMatrix(context.Background(), []Target{target},
		MatrixOptions{Concurrencies: []int{4}, Scenarios: []string{scenarioHot}}, testWriter{t})
	if len(rows) != 1 || rows[0].Skipped == "" {
		t.Fatalf("rows %+v, want it skipped", rows)
	}
}

// testWriter sends log lines to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

func TestReplicaSetTargetSellsExactlyTheStock(t *testing.T) {
	sellOut(t, NewReplicaSetTarget(SeckilldOptions{Binary: buildSeckilld(t), WorkDir: t.TempDir()}))
}
