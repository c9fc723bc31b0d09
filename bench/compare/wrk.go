package compare

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/bench"
)

// The independent load generator: wrk (Debian's package, written by
// nobody here) drives seckilld and the null HTTP server in the hot
// scenario, with a Lua script that gives each request a request_id and a
// user_id of its own (wrk.lua), so that users can check seckill-bench's
// own figures against a client they did not have to trust. Its rows are
// named wrk-seckilld and wrk-null-http.

//go:embed wrk.lua
var wrkScript string

// wrkPrefix starts the name of the rows wrk measured.
const wrkPrefix = "wrk-"

// wrkTargets are the targets wrk drives.
var wrkTargets = map[string]bool{"seckilld": true, "null-http": true}

// WrkOptions configures the wrk cells.
type WrkOptions struct {
	// Binary is the wrk program (default: found on PATH).
	Binary string
	// Concurrencies are wrk's connections, one cell each.
	Concurrencies []int
	// Threads are wrk's threads (default 2: the machine's cores).
	Threads int
	// Timeout is wrk's bound of one request.
	Timeout time.Duration
}

// httpTarget is a target served over HTTP at BaseURL.
type httpTarget interface {
	Target
	BaseURL() string
}

// BaseURL returns the server's URL.
func (t *SeckilldTarget) BaseURL() string { return t.base }

// BaseURL returns the null server's URL.
func (t *NullTarget) BaseURL() string { return t.base }

// wrkResult is what the script's done() prints.
type wrkResult struct {
	requests, durationUS, statusErrors, socketErrors, p50US, p99US int64
}

// parseWrk reads the script's SECKILL_WRK line from wrk's output.
func parseWrk(output []byte) (wrkResult, error) {
	scanner := bufio.NewScanner(bytes.NewReader(output))
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) != 7 || fields[0] != "SECKILL_WRK" {
			continue
		}
		var values [6]int64
		for i := range values {
			v, err := strconv.ParseInt(fields[i+1], 10, 64)
			if err != nil {
				return wrkResult{}, fmt.Errorf("wrk: %q: %w", scanner.Text(), err)
			}
			values[i] = v
		}
		return wrkResult{values[0], values[1], values[2], values[3], values[4], values[5]}, nil
	}
	return wrkResult{}, fmt.Errorf("wrk printed no result line: %s", firstLine(strings.TrimSpace(string(output))))
}

// runWrkCell runs wrk against target for the hot cell's duration at
// concurrency connections, on a new SKU.
func runWrkCell(ctx context.Context, target Target, concurrency int, options MatrixOptions) Row {
	row := Row{Target: wrkPrefix + target.Name(), Scenario: scenarioHot, Concurrency: concurrency, Batch: 1, ServerCPUS: -1}
	ht, ok := target.(httpTarget)
	if !ok {
		row.Skipped = "not an HTTP server"
		return row
	}
	wrk := options.Wrk
	binary := wrk.Binary
	if binary == "" {
		found, err := exec.LookPath("wrk")
		if err != nil {
			row.Skipped = "wrk not found on PATH (bench/compare.sh installs Debian's wrk)"
			return row
		}
		binary = found
	}
	sku := SKURef{CampaignID: fmt.Sprintf("wrk-c%d-%s", concurrency, strconv.FormatInt(time.Now().UnixNano(), 36)),
		SKUID: "sku-1", SaleLimit: bench.HotSaleLimit}
	if _, err := target.Prepare(ctx, sku); err != nil {
		row.Skipped = "prepare: " + err.Error()
		row.Verdict = "FAIL: " + row.Skipped
		return row
	}
	script, err := os.CreateTemp("", "seckill-compare-wrk-*.lua")
	if err != nil {
		row.Skipped = err.Error()
		return row
	}
	defer os.Remove(script.Name())
	if _, err := script.WriteString(wrkScript); err != nil || script.Close() != nil {
		row.Skipped = fmt.Sprintf("writing the wrk script: %v", err)
		return row
	}
	path := "/v1/campaigns/" + sku.CampaignID + "/skus/" + sku.SKUID + "/reservations"
	threads := max(wrk.Threads, 1)
	cmd := exec.CommandContext(ctx, binary, "-t", strconv.Itoa(min(threads, concurrency)), "-c", strconv.Itoa(concurrency),
		"-d", fmt.Sprintf("%ds", max(int(options.HotDuration.Seconds()), 1)), "--timeout", wrk.Timeout.String(),
		"-s", filepath.Clean(script.Name()), ht.BaseURL()+path, "--", sku.CampaignID, path)
	serverBefore, serverKnown := target.ServerCPU()
	output, err := cmd.CombinedOutput()
	serverAfter, serverKnownAfter := target.ServerCPU()
	if err != nil {
		row.Skipped = fmt.Sprintf("wrk: %v: %s", err, firstLine(strings.TrimSpace(string(output))))
		row.Verdict = "FAIL: " + row.Skipped
		return row
	}
	if serverKnown && serverKnownAfter {
		row.ServerCPUS = (serverAfter - serverBefore).Seconds()
	}
	if state := cmd.ProcessState; state != nil {
		row.ClientCPUS = (state.UserTime() + state.SystemTime()).Seconds()
	}
	result, err := parseWrk(output)
	if err != nil {
		row.Skipped = err.Error()
		row.Verdict = "FAIL: " + row.Skipped
		return row
	}
	row.Requests = result.requests
	row.ElapsedS = float64(result.durationUS) / 1e6
	if row.ElapsedS > 0 {
		row.ThroughputRPS = float64(row.Requests) / row.ElapsedS
	}
	row.P50MS, row.P99MS = float64(result.p50US)/1000, float64(result.p99US)/1000
	row.Errors = result.statusErrors + result.socketErrors
	auditCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	audit, err := target.Audit(auditCtx, sku)
	if err != nil {
		row.Verdict = "FAIL: audit: " + err.Error()
		return row
	}
	row.Audit = audit
	row.Correct, row.Verdict = judgeWrk(result, audit)
	return row
}

// judgeWrk decides a wrk cell: every answer a 202 and, where the target
// keeps state, a consistent state holding at least the 202s wrk counted
// (requests still in flight when wrk stopped may have been accepted too).
func judgeWrk(result wrkResult, audit Audit) (bool, string) {
	answered := result.requests - result.statusErrors
	var problems []string
	if result.statusErrors > 0 || result.socketErrors > 0 {
		problems = append(problems, fmt.Sprintf("%d non-2xx answers, %d socket errors", result.statusErrors, result.socketErrors))
	}
	if audit.Checked && !audit.Consistent {
		problems = append(problems, "inconsistent: "+audit.Detail)
	}
	if audit.Checked && audit.Sold < answered {
		problems = append(problems, fmt.Sprintf("state holds %d, wrk counted %d accepted", audit.Sold, answered))
	}
	if len(problems) > 0 {
		return false, "FAIL: " + strings.Join(problems, "; ")
	}
	if !audit.Checked {
		return true, fmt.Sprintf("n/a: %d answered 202 (%s)", answered, audit.Detail)
	}
	return true, fmt.Sprintf("ok: %d reserved, wrk counted %d, state agrees", audit.Sold, answered)
}
