package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/httpapi"
)

// runMain runs the command and decodes its JSON result.
func runMain(t *testing.T, args ...string) (int, map[string]any, string) {
	t.Helper()
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "result.json")
	args = append(args, "--json", jsonPath, "--progress", "off")
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a bound for a hung run
	defer cancel()
	status := Main(ctx, args, &stdout, &stderr)
	output := stdout.String() + stderr.String()
	body, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatalf("no JSON written (exit %d): %v\n%s", status, err, output)
	}
	var result map[string]any
	if err := json.Unmarshal(body, &result); err != nil {
		t.Fatal(err)
	}
	return status, result, output
}

func number(t *testing.T, result map[string]any, key string) float64 {
	t.Helper()
	value, ok := result[key].(float64)
	if !ok {
		t.Fatalf("JSON field %q missing or not a number: %v", key, result[key])
	}
	return value
}

func TestSeedAgainstSeckilldPasses(t *testing.T) {
	target := startSeckilld(t, serverOptions{adminToken: "secret"})
	status, result, output := runMain(t, "--target", target, "--admin-token", "secret",
		"--scenario", "seed", "--stock", "100", "--requests", "5000", "--concurrency", "32", "--seed", "7")
	if status != ExitPass {
		t.Fatalf("exit %d, want %d\n%s", status, ExitPass, output)
	}
	for _, key := range []string{"requests", "accepted", "sold_out", "already_purchased", "queue_full", "errors",
		"oversold", "duplicate_winners", "undersold", "throughput_rps"} {
		number(t, result, key)
	}
	if got := number(t, result, "accepted"); got != 100 {
		t.Errorf("accepted %v, want 100", got)
	}
	if got := number(t, result, "oversold"); got != 0 {
		t.Errorf("oversold %v, want 0", got)
	}
	if got := number(t, result, "duplicate_winners"); got != 0 {
		t.Errorf("duplicate_winners %v, want 0", got)
	}
	if got := number(t, result, "sold_out"); got < 4000 {
		t.Errorf("sold_out %v, want most of 5000", got)
	}
	if got := number(t, result, "already_purchased"); got == 0 {
		t.Errorf("already_purchased 0: the repeat clicks of winners should meet it")
	}
	if got := number(t, result, "requests"); got < 5000 {
		t.Errorf("requests %v < 5000 attempts", got)
	}
	latency, ok := result["latency_ms"].(map[string]any)
	if !ok {
		t.Fatalf("latency_ms missing")
	}
	for _, key := range []string{"p50", "p90", "p99", "p999", "max"} {
		if _, ok := latency[key].(float64); !ok {
			t.Errorf("latency_ms.%s missing", key)
		}
	}
	byOutcome, ok := result["latency_ms_by_outcome"].(map[string]any)
	if !ok || byOutcome["accepted"] == nil || byOutcome["sold_out"] == nil {
		t.Errorf("latency_ms_by_outcome lacks accepted or sold_out: %v", result["latency_ms_by_outcome"])
	}
	audit, ok := result["audit"].(map[string]any)
	if !ok {
		t.Fatalf("audit missing")
	}
	if audit["ok"] != true || audit["available"] != 0.0 || audit["reserved"] != 100.0 || audit["confirmed"] != 0.0 {
		t.Errorf("audit %v", audit)
	}
	if _, ok := audit["violations"].([]any); !ok {
		t.Errorf("audit.violations missing: %v", audit)
	}
	if result["scenario"] != "seed" || result["passed"] != true {
		t.Errorf("scenario %v passed %v", result["scenario"], result["passed"])
	}
	if !strings.Contains(output, "verdict    PASS") {
		t.Errorf("summary lacks the verdict:\n%s", output)
	}
}

// A server that answers ACCEPTED for a unit it already sold (every tenth
// reserve here) fails the run, though its own audit holds.
func TestSeedAgainstOversellingServerFails(t *testing.T) {
	target := startSeckilld(t, serverOptions{wrap: func(e *actors.Engine) httpapi.Engine {
		return &misbehavingEngine{Engine: e, oversellEvery: 10}
	}})
	status, result, output := runMain(t, "--target", target, "--admin-token", "admin",
		"--scenario", "seed", "--stock", "100", "--requests", "2000", "--concurrency", "16")
	if status != ExitChecksFailed {
		t.Fatalf("exit %d, want %d\n%s", status, ExitChecksFailed, output)
	}
	if got := number(t, result, "oversold"); got <= 0 {
		t.Errorf("oversold %v, want > 0", got)
	}
	if result["passed"] != false {
		t.Errorf("passed %v", result["passed"])
	}
	if !strings.Contains(output, "oversold") {
		t.Errorf("summary does not name the oversell:\n%s", output)
	}
}

// 429 QUEUE_FULL (admission allows 2 reserves in flight until the SKU's
// rate is first measured, after about a second) is resent until the sale
// completes, and counted; a 504 RESULT_UNKNOWN (every fifth new
// reservation's answer is lost) is settled by package client through the
// request lookup, so the tool gets the reservation made, never the 504.
func TestSeedRidesOutQueueFullAndUnknownResults(t *testing.T) {
	engine := &misbehavingEngine{unknownEvery: 5}
	target := startSeckilld(t, serverOptions{
		wrap:   func(e *actors.Engine) httpapi.Engine { engine.Engine = e; return engine },
		config: func(c *httpapi.Config) { c.MinConsumerRate = 2 },
	})
	status, result, output := runMain(t, "--target", target, "--admin-token", "admin",
		"--scenario", "seed", "--stock", "100", "--requests", "3000", "--concurrency", "16")
	if status != ExitPass {
		t.Fatalf("exit %d, want %d\n%s", status, ExitPass, output)
	}
	if got := number(t, result, "queue_full"); got == 0 {
		t.Errorf("queue_full 0, want the 429s counted")
	}
	outcomes := result["outcomes"].(map[string]any)
	if lost := engine.creates.Load() / 5; lost == 0 || outcomes["result_unknown"] != nil {
		t.Errorf("%d answers lost as 504, outcomes %v: want some lost, and every one settled", lost, outcomes)
	}
	if got := number(t, result, "accepted"); got != 100 {
		t.Errorf("accepted %v, want 100", got)
	}
}

func TestHotAndManySKUsAgainstSeckilld(t *testing.T) {
	target := startSeckilld(t, serverOptions{})
	status, result, output := runMain(t, "--target", target, "--admin-token", "admin", "--scenario", "hot", "--duration", "1s", "--concurrency", "8")
	if status != ExitPass {
		t.Fatalf("hot: exit %d\n%s", status, output)
	}
	if number(t, result, "accepted") == 0 || number(t, result, "throughput_rps") == 0 {
		t.Errorf("hot accepted nothing:\n%s", output)
	}
	status, result, output = runMain(t, "--target", target, "--admin-token", "admin", "--scenario", "many-skus",
		"--skus", "20", "--stock", "5", "--requests", "600", "--concurrency", "16")
	if status != ExitPass {
		t.Fatalf("many-skus: exit %d\n%s", status, output)
	}
	if got := number(t, result, "accepted"); got != 100 {
		t.Errorf("many-skus accepted %v, want 20 x 5", got)
	}
}

func TestHotOpenLoopAgainstSeckilld(t *testing.T) {
	target := startSeckilld(t, serverOptions{})
	status, result, output := runMain(t, "--target", target, "--admin-token", "admin", "--scenario", "hot",
		"--duration", "1s", "--rate", "500", "--concurrency", "16")
	if status != ExitPass {
		t.Fatalf("exit %d\n%s", status, output)
	}
	if result["loop"] != "open" {
		t.Errorf("loop %v", result["loop"])
	}
	if got := number(t, result, "requests"); got < 400 || got > 501 {
		t.Errorf("requests %v, want about 500 in 1 s at 500/s", got)
	}
}

func TestPayflowAgainstSeckilld(t *testing.T) {
	target := startSeckilld(t, serverOptions{paymentSecret: "pay-secret"})
	status, result, output := runMain(t, "--target", target, "--admin-token", "admin", "--scenario", "payflow",
		"--stock", "80", "--requests", "80", "--concurrency", "16", "--payment-window", "1s", "--payment-secret", "pay-secret")
	if status != ExitPass {
		t.Fatalf("exit %d\n%s", status, output)
	}
	payflow, ok := result["payflow"].(map[string]any)
	if !ok {
		t.Fatalf("payflow missing")
	}
	// A payment made at once is PAID, or, on a machine slow enough that
	// it came after expire_at, answered for refund and counted late:
	// either way the pay path ran and every answer agreed with the state.
	if payflow["paid"].(float64)+payflow["late_payments"].(float64) == 0 || payflow["closed"] == 0.0 ||
		payflow["refund_required"] == 0.0 || payflow["mismatches"] != 0.0 {
		t.Errorf("payflow %v", payflow)
	}
	if payflow["refund_required"] != payflow["refunds_listed"] {
		t.Errorf("refund_required %v, listed %v", payflow["refund_required"], payflow["refunds_listed"])
	}
}

// A reserve phase longer than the payment window: the first reservations
// expire while the last ones are made, and the engine hands their tokens
// on (release_on_close). That is no reuse: the run passes.
func TestPayflowWhoseReservePhaseOutlastsTheWindow(t *testing.T) {
	target := startSeckilld(t, serverOptions{})
	status, result, output := runMain(t, "--target", target, "--admin-token", "admin", "--scenario", "payflow",
		"--stock", "80", "--requests", "80", "--rate", "40", "--payment-window", "1s")
	if status != ExitPass || number(t, result, "token_reused") != 0 {
		t.Fatalf("exit %d\n%s", status, output)
	}
	if payflow, _ := result["payflow"].(map[string]any); payflow == nil || payflow["late_payments"] == 0.0 {
		t.Errorf("payflow %v, want late payments (reservations that expired during the reserve phase)", payflow)
	}
}

func TestMainRejectsBadFlagsAndRemoteTargets(t *testing.T) {
	for _, args := range [][]string{
		{"--scenario", "nope"},
		{"--progress", "weird"},
		{"--rate", "Inf"},
		{"--rate", "NaN"},
		{"--rate", "1e-300"},                      // one attempt every 1e300 s: beyond any run, and beyond a time.Duration
		{"--rate", "0.0005", "--max-time", "30m"}, // one every 2000 s: a single attempt in the run
		{"--stock", "2000000000"},
		{"--campaign", "a/b"},
		{"--campaign", strings.Repeat("c", MaxCampaignIDLength+1)},
		{"--target", "http://10.1.2.3:80"},
		{"--target", "http://example.com"},
		{"--target", "http://0.0.0.0:8080"},
		{"--target", "ftp://127.0.0.1:8080"},
		{"--target", "127.0.0.1:8080"},
		{"--target", ""},
		{"--target", "http://127.0.0.1:99999"},
		{"--target", "http://127.0.0.1:8080/prefix"},
		{"--target", "http://user:pw@127.0.0.1:8080"},
		{"--target", "https://127.0.0.1:8080"},
		{"--target", "http://127.0.0.1"},
		{"--target", "http://127.0.0.1:"},
		{"--json", "/nonexistent-dir/result.json"},
		{"--report", "/nonexistent-dir/report.html"},
	} {
		var stdout, stderr bytes.Buffer
		if status := Main(context.Background(), args, &stdout, &stderr); status != ExitUsage {
			t.Errorf("%q: exit %d, want %d (bad flags)\n%s", args, status, ExitUsage, stderr.String())
		}
		if !strings.HasPrefix(stderr.String(), "seckill-bench: ") || stdout.Len() != 0 {
			t.Errorf("%q: stdout %q, stderr %q", args, stdout.String(), stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	Main(context.Background(), []string{"--target", "http://10.1.2.3:80"}, &stdout, &stderr)
	if !strings.Contains(stderr.String(), "not a loopback address") {
		t.Errorf("stderr: %s", stderr.String())
	}
}

func TestManySKUsWithFewerUsersThanUnitsSellsOneToEach(t *testing.T) {
	target := startSeckilld(t, serverOptions{})
	// 20 SKUs x 50 units, ~270 distinct users: every SKU has fewer users
	// than units, so each user gets one unit and no SKU sells out.
	status, result, output := runMain(t, "--target", target, "--admin-token", "admin", "--scenario", "many-skus",
		"--skus", "20", "--stock", "50", "--requests", "300", "--concurrency", "16")
	if status != ExitPass {
		t.Fatalf("exit %d\n%s", status, output)
	}
	plan, err := NewPlan(PlanSpec{Attempts: 300, Users: 300, SKUs: 20, RepeatShare: 0.05, RetryShare: 0.05, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var users int64
	for _, n := range plan.UsersBySKU() {
		users += n
	}
	if got := number(t, result, "accepted"); got != float64(users) {
		t.Errorf("accepted %v, want one per user (%d)", got, users)
	}
}

func TestMaxTimeStopsARunAndSaysSo(t *testing.T) {
	target := startSeckilld(t, serverOptions{})
	started := time.Now()
	status, result, output := runMain(t, "--target", target, "--admin-token", "admin", "--scenario", "seed",
		"--requests", "1000000", "--concurrency", "4", "--max-time", "500ms")
	if status != ExitChecksFailed {
		t.Fatalf("exit %d, want %d\n%s", status, ExitChecksFailed, output)
	}
	if sent := number(t, result, "requests"); sent >= 1_000_000 {
		t.Errorf("%v requests sent: the run was not stopped", sent)
	}
	t.Logf("stopped after %v", time.Since(started).Round(time.Millisecond))
	if !strings.Contains(output, "stopped by --max-time 500ms") {
		t.Errorf("summary does not say why it stopped:\n%s", output)
	}
	if result["audit"] == nil {
		t.Errorf("no audit after the stop")
	}
}

func TestCPUProfileFlagWritesAProfile(t *testing.T) {
	target := startSeckilld(t, serverOptions{})
	path := filepath.Join(t.TempDir(), "client.pprof")
	status, _, output := runMain(t, "--target", target, "--admin-token", "admin", "--scenario", "hot", "--requests", "200", "--concurrency", "4",
		"--cpuprofile", path)
	if status != ExitPass {
		t.Fatalf("exit %d\n%s", status, output)
	}
	info, err := os.Stat(path)
	if err != nil || info.Size() == 0 {
		t.Fatalf("no profile written: %v", err)
	}
}

func TestIPv6LoopbackTarget(t *testing.T) {
	if listener, err := net.Listen("tcp", "[::1]:0"); err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	} else {
		listener.Close()
	}
	target := startSeckilld(t, serverOptions{addr: "[::1]:0"})
	status, result, output := runMain(t, "--target", target, "--admin-token", "admin", "--scenario", "hot", "--requests", "50", "--concurrency", "2")
	if status != ExitPass || number(t, result, "accepted") != 50 {
		t.Fatalf("hot against %s: exit %d\n%s", target, status, output)
	}
}

// A reserve answered 500 (every tenth here) is no answer: the hot run,
// which does not resend, fails and counts the attempts left unanswered,
// though nothing was sold twice and the audit holds.
func TestHotWithUnansweredAttemptsFails(t *testing.T) {
	target := startSeckilld(t, serverOptions{wrap: func(e *actors.Engine) httpapi.Engine {
		return &misbehavingEngine{Engine: e, failEvery: 10}
	}})
	status, result, output := runMain(t, "--target", target, "--admin-token", "admin",
		"--scenario", "hot", "--requests", "200", "--concurrency", "4")
	if status != ExitChecksFailed {
		t.Fatalf("exit %d, want %d\n%s", status, ExitChecksFailed, output)
	}
	if got := number(t, result, "unanswered"); got != 20 {
		t.Errorf("unanswered %v, want 20 (every tenth of 200)", got)
	}
	if got := number(t, result, "errors"); got != 20 {
		t.Errorf("errors %v, want 20", got)
	}
	if !strings.Contains(output, "unanswered: 20 attempts") {
		t.Errorf("the verdict does not name the unanswered attempts:\n%s", output)
	}
}

// A seed sale resends an attempt answered 500 with its request_id; once
// the resend is answered the attempt is settled: errors are counted, none
// is left unanswered, and the run passes.
func TestSeedSettlesErrorsByResending(t *testing.T) {
	target := startSeckilld(t, serverOptions{wrap: func(e *actors.Engine) httpapi.Engine {
		return &misbehavingEngine{Engine: e, failEvery: 7}
	}})
	status, result, output := runMain(t, "--target", target, "--admin-token", "admin",
		"--scenario", "seed", "--stock", "100", "--requests", "2000", "--concurrency", "8")
	if status != ExitPass {
		t.Fatalf("exit %d, want %d\n%s", status, ExitPass, output)
	}
	if number(t, result, "errors") == 0 || number(t, result, "unanswered") != 0 {
		t.Errorf("errors %v, unanswered %v: want some errors, each settled by a resend", result["errors"], result["unanswered"])
	}
}
