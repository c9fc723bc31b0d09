package ordersbench_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seckill/seckill/bench/ordersbench"
	"github.com/seckill/seckill/internal/testbin"
)

// make bench-orders, tiny, so that it cannot rot: a sale of 200 units to
// 3,000 clicks through the real binaries, every order in PostgreSQL, a
// clean reconciliation and the figures printed.
func TestBenchOrdersTiny(t *testing.T) {
	dir := testbin.Dir(t, nil, "github.com/seckill/seckill/cmd/seckilld", "github.com/seckill/seckill/cmd/seckill-orders")
	bins := map[string]string{"seckilld": filepath.Join(dir, "seckilld"), "seckill-orders": filepath.Join(dir, "seckill-orders")}
	var progress bytes.Buffer
	r, err := ordersbench.Run(context.Background(), ordersbench.Options{Seckilld: bins["seckilld"], Orders: bins["seckill-orders"],
		Stock: 200, Attempts: 3000, Concurrency: 32, Batch: 100, Progress: &progress})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	var out bytes.Buffer
	ordersbench.WriteReport(&out, r)
	t.Log("\n" + out.String())
	if !r.Passed || r.Sold != 200 || r.Events < 201 || r.EventsPerSec <= 0 || r.LagP99MS <= 0 {
		t.Fatalf("%+v", r)
	}
	// Where it was measured (a test binary records no commit: "unknown";
	// a load average is -1 when /proc/loadavg is unread).
	if r.Commit == "" || r.LoadAverageBefore < 0 || r.LoadAverageAfter < 0 {
		t.Errorf("commit %q, load average %v before, %v after: not recorded", r.Commit, r.LoadAverageBefore, r.LoadAverageAfter)
	}
	if !strings.Contains(out.String(), "events/s") || !strings.Contains(out.String(), "p99") || !strings.Contains(out.String(), "bench-orders: PASS") {
		t.Fatalf("report:\n%s", out.String())
	}
}

// A --json whose directory does not exist is a usage error before any
// server starts, not a lost report after the whole sale.
func TestMainRefusesAJSONPathItCannotWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "orders.json")
	var stdout, stderr bytes.Buffer
	status := ordersbench.Main(context.Background(), []string{"--json", path, "--seckilld", "/nonexistent/seckilld"}, &stdout, &stderr)
	if status != 2 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "its directory does not exist") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 naming the missing directory, nothing run", status, stdout.String(), stderr.String())
	}
}

// Events that all committed at one instant (one transaction) have no rate:
// the report says so instead of printing 0 events/s.
func TestWriteReportGivesNoRateWithoutASpan(t *testing.T) {
	var out bytes.Buffer
	ordersbench.WriteReport(&out, ordersbench.Report{Events: 201, ReplayEvents: 201, Passed: true})
	if strings.Contains(out.String(), "0 events/s") || strings.Count(out.String(), "too few transactions for a rate") != 2 {
		t.Errorf("report of events without a span:\n%s", out.String())
	}
	out.Reset()
	ordersbench.WriteReport(&out, ordersbench.Report{Events: 201, SpanS: 0.5, EventsPerSec: 402, ReplayEvents: 201, ReplaySpanS: 0.25, ReplayEventsPerSec: 804})
	for _, want := range []string{"201 events committed over 0.50 s: 402 events/s", "201 events committed over 0.25 s: 804 events/s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report does not say %q:\n%s", want, out.String())
		}
	}
}

// The report says where its figures were measured: the commit and the
// load average before and after, as compare's does.
func TestWriteReportSaysWhereItWasMeasured(t *testing.T) {
	var out bytes.Buffer
	ordersbench.WriteReport(&out, ordersbench.Report{Commit: "abc1234", LoadAverageBefore: 1.5, LoadAverageAfter: 2.25})
	if want := "commit abc1234; load average 1.50 before, 2.25 after"; !strings.Contains(out.String(), want) {
		t.Errorf("report does not say %q:\n%s", want, out.String())
	}
}
