package compare

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// --json writes one object per measured cell with exactly the keys
// docs/benchmarks.md lists; CPU per item and the audit are null where they do not apply,
// and skipped cells are left out.
func TestCellsHaveExactlyTheListedKeys(t *testing.T) {
	rows := []Row{
		{Target: "seckilld", Scenario: "hot", Concurrency: 64, Batch: 64, Requests: 1000, ThroughputRPS: 500, P50MS: 1, P99MS: 2,
			ServerCPUS: 0.02, Audit: Audit{Checked: true, Consistent: true}, Correct: true},
		{Target: "engine", Scenario: "seed", Concurrency: 16, Batch: 1, Requests: 10, ServerCPUS: -1, Audit: Audit{Checked: true}},
		{Target: "null-http", Scenario: "hot", Concurrency: 64, Requests: 10, ServerCPUS: 0.001, Correct: true},
		{Target: "postgres", Scenario: "hot", Concurrency: 64, Skipped: "not installed"},
	}
	path := filepath.Join(t.TempDir(), "cells.json")
	if err := writeJSON(path, Cells(rows)); err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cells []map[string]any
	if err := json.Unmarshal(body, &cells); err != nil {
		t.Fatal(err)
	}
	if len(cells) != 3 {
		t.Fatalf("%d cells, want the 3 measured ones", len(cells))
	}
	want := []string{"audit_ok", "batch", "concurrency", "p50_ms", "p99_ms", "rate_per_s", "scenario", "server_cpu_us_per_item", "target"}
	for _, c := range cells {
		if got := slices.Sorted(maps.Keys(c)); !slices.Equal(got, want) {
			t.Fatalf("keys %v, want %v", got, want)
		}
	}
	if cells[0]["server_cpu_us_per_item"] != 20.0 || cells[0]["audit_ok"] != true || cells[0]["batch"] != 64.0 {
		t.Errorf("seckilld cell %v", cells[0])
	}
	if cells[1]["server_cpu_us_per_item"] != nil || cells[1]["audit_ok"] != false || cells[1]["batch"] != 1.0 {
		t.Errorf("engine cell %v", cells[1])
	}
	if cells[2]["audit_ok"] != nil || cells[2]["batch"] != 1.0 {
		t.Errorf("null-http cell %v", cells[2])
	}
}

// wrk's result line is read from its output; output without it is an error.
func TestParseWrk(t *testing.T) {
	out := []byte("Running 5s test @ http://127.0.0.1:1/x\n  2 threads and 64 connections\nSECKILL_WRK 1000 5000000 3 1 800 4200\n")
	got, err := parseWrk(out)
	if err != nil {
		t.Fatal(err)
	}
	if got != (wrkResult{requests: 1000, durationUS: 5_000_000, statusErrors: 3, socketErrors: 1, p50US: 800, p99US: 4200}) {
		t.Fatalf("%+v", got)
	}
	if _, err := parseWrk([]byte("unable to connect to 127.0.0.1:1 Connection refused\n")); err == nil {
		t.Fatal("no error without a result line")
	}
	ok, verdict := judgeWrk(got, Audit{Checked: true, Consistent: true, Sold: 997})
	if ok {
		t.Fatalf("non-2xx answers judged ok: %s", verdict)
	}
}

// The batch cells and wrk's cells follow the single-request cells.
func TestMatrixCellsWithBatchesAndWrk(t *testing.T) {
	cells := matrixCells(MatrixOptions{Concurrencies: []int{64}, Scenarios: []string{"hot", "seed"}, Batch: 64,
		BatchConcurrencies: []int{16}, Wrk: &WrkOptions{Concurrencies: []int{64}}})
	want := []matrixCell{{scenario: "hot", concurrency: 64}, {scenario: "seed", concurrency: 64},
		{scenario: "hot", concurrency: 16, batch: 64}, {scenario: "seed", concurrency: 16, batch: 64},
		{scenario: "hot", concurrency: 64, wrk: true}}
	if !slices.Equal(cells, want) {
		t.Fatalf("cells %+v, want %+v", cells, want)
	}
}

// wrk drives the null HTTP server and seckilld through the script that
// gives each request its own ids: every answer a 202, and seckilld's state
// holds at least what wrk counted.
func TestWrkCells(t *testing.T) {
	if _, err := exec.LookPath("wrk"); err != nil {
		if os.Getenv(requireBaselinesVariable) == "1" {
			t.Fatalf("wrk not found (%s=1: every baseline must run)", requireBaselinesVariable)
		}
		t.Skip("wrk not found on PATH")
	}
	targets := []Target{ // built before the clock below starts
		&NullTarget{Command: nullCommand(t), workDir: t.TempDir(), maxConns: 16, timeout: 10 * time.Second},
		NewSeckilldTarget(SeckilldOptions{Binary: buildSeckilld(t), WorkDir: t.TempDir(), MaxConns: 16, Timeout: 10 * time.Second}),
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangBound)
	defer cancel()
	options := MatrixOptions{HotDuration: time.Second, Wrk: &WrkOptions{Threads: 2, Timeout: 10 * time.Second}}
	for _, target := range targets {
		if err := target.Start(ctx); err != nil {
			t.Fatal(err)
		}
		row := runWrkCell(ctx, target, 8, options)
		if err := target.Close(); err != nil {
			t.Error(err)
		}
		if row.Target != "wrk-"+target.Name() || row.Skipped != "" || !row.Correct || row.Requests == 0 || row.ServerCPUS <= 0 {
			t.Errorf("%s: %+v", target.Name(), row)
		}
		if target.Name() == "seckilld" && (!row.Audit.Checked || row.Audit.Sold < row.Requests-row.Errors) {
			t.Errorf("seckilld audit %+v for %d requests", row.Audit, row.Requests)
		}
	}
}
