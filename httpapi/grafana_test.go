package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// grafanaDashboard is the Grafana dashboard shipped for Prometheus users.
const grafanaDashboard = "../deploy/grafana/seckill.json"

// Every metric the Grafana dashboard queries is one the server exports
// (its /metrics after a sale's first steps), so a renamed metric breaks
// this test rather than a panel.
func TestGrafanaDashboardUsesExportedMetrics(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(grafanaDashboard)
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s: %v", grafanaDashboard, err)
	}
	var queries []string
	var walk func(v any, key string)
	walk = func(v any, key string) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				walk(c, k)
			}
		case []any:
			for _, c := range v {
				walk(c, key)
			}
		case string:
			if key == "expr" || key == "query" {
				queries = append(queries, v)
			}
		}
	}
	walk(dash, "")
	if len(queries) < 20 {
		t.Fatalf("%s: only %d queries found", grafanaDashboard, len(queries))
	}

	ts := startServer(t, serverOptions{})
	ts.define(campaign("g", "15m", map[string]int{"s": 2}))
	r := ts.reserve("g", "s", "r1", "u1")
	want(t, r, http.StatusAccepted, "")
	want(t, ts.post("/v1/reservations/"+r.str("reservation_id")+"/payment", map[string]any{"payment_id": "p1", "amount": 1}), http.StatusOK, "")
	exported := exportedMetrics(t, ts.get("/metrics").raw)

	// A metric is a seckill_ name, or any name a selector or range
	// follows (name{...}, name[...]).
	names := regexp.MustCompile(`\bseckill_[a-z0-9_]+|[a-zA-Z_:][a-zA-Z0-9_:]*\s*[{\[]`)
	used := map[string]bool{}
	for _, q := range queries {
		for _, m := range names.FindAllString(q, -1) {
			used[strings.TrimRight(m, "{[ \t")] = true
		}
	}
	var missing []string
	for name := range used {
		if !exported[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("%s queries metrics the server does not export: %v", grafanaDashboard, missing)
	}
	if len(used) < 15 {
		t.Errorf("only %d metrics used: %v", len(used), used)
	}
}

// exportedMetrics returns the series names of a text exposition: each
// family, and a histogram's _bucket, _sum and _count.
func exportedMetrics(t *testing.T, exposition []byte) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	lines := bufio.NewScanner(bytes.NewReader(exposition))
	for lines.Scan() {
		f := strings.Fields(lines.Text())
		if len(f) != 4 || f[0] != "#" || f[1] != "TYPE" {
			continue
		}
		out[f[2]] = true
		switch f[3] {
		case "histogram":
			out[f[2]+"_bucket"], out[f[2]+"_sum"], out[f[2]+"_count"] = true, true, true
		case "summary":
			out[f[2]+"_sum"], out[f[2]+"_count"] = true, true
		}
	}
	if len(out) == 0 {
		t.Fatalf("no metric in the exposition:\n%s", exposition)
	}
	return out
}
