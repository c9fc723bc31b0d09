package prometheus

import (
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// rulesFile is the file operators load (docs/operating.md#alerts).
const rulesFile = "seckill-alerts.yml"

// evaluationInterval is how often the tests evaluate each rule, as a
// Prometheus with evaluation_interval 30s would (eval_test.go).
const evaluationInterval = 30 * time.Second

// stockParser parses as a Prometheus server does by default: no
// experimental functions.
var stockParser = parser.NewParser(parser.Options{})

// quiet is the logger of the rules' parser (it warns of a second YAML
// document, which the file has not).
var quiet = slog.New(slog.DiscardHandler)

// loadRules parses and validates the rules file as Prometheus does when
// it loads it, and returns its alerting rules by name.
func loadRules(t *testing.T) map[string]*rulefmt.Rule {
	t.Helper()
	groups, errs := rulefmt.ParseFile(rulesFile, false, model.UTF8Validation, stockParser, quiet)
	if len(errs) > 0 {
		t.Fatalf("%s does not load: %v", rulesFile, errs)
	}
	byName := map[string]*rulefmt.Rule{}
	for _, g := range groups.Groups {
		for i := range g.Rules {
			r := &g.Rules[i]
			if r.Alert == "" {
				t.Fatalf("%s: a recording rule (%s): the file holds alerts only", rulesFile, r.Record)
			}
			if byName[r.Alert] != nil {
				t.Fatalf("%s: alert %s twice", rulesFile, r.Alert)
			}
			byName[r.Alert] = r
		}
	}
	return byName
}

// alertCase is one test of one alert: Prometheus series in promqltest's
// load notation (one sample every 30 s from time 0), the time at which
// the firing alerts are read (the rule evaluated every 30 s until then),
// and the label sets of the alerts that must be firing then (alertname
// and severity left out).
type alertCase struct {
	name   string
	alert  string
	series string
	at     time.Duration
	firing []map[string]string
}

var alertCases = []alertCase{
	{
		name:  "a SKU unavailable for over a minute",
		alert: "SeckillSKUUnavailable",
		series: `seckill_sku_unavailable{instance="a:8080",campaign_id="c",sku_id="s1"} 0 0 1 1 1 1 1
seckill_sku_unavailable{instance="a:8080",campaign_id="c",sku_id="s2"} 0 0 0 0 0 0 0`,
		at:     3 * time.Minute,
		firing: []map[string]string{{"instance": "a:8080", "campaign_id": "c", "sku_id": "s1"}},
	},
	{
		name:   "a SKU unavailable for 30 s (a recovery after a freed disk)",
		alert:  "SeckillSKUUnavailable",
		series: `seckill_sku_unavailable{instance="a:8080",campaign_id="c",sku_id="s1"} 0 0 1 0 0 0 0`,
		at:     3 * time.Minute,
	},
	{
		name:   "a call waiting 6 s for durability, 40 s long",
		alert:  "SeckillCommitStalled",
		series: `seckill_sku_commit_wait_seconds{instance="a:8080",campaign_id="c",sku_id="s1"} 0.001 0.002 6 36 66`,
		at:     2 * time.Minute,
		firing: []map[string]string{{"instance": "a:8080", "campaign_id": "c", "sku_id": "s1"}},
	},
	{
		name:   "commits of milliseconds",
		alert:  "SeckillCommitStalled",
		series: `seckill_sku_commit_wait_seconds{instance="a:8080",campaign_id="c",sku_id="s1"} 0.001 0.003 0.2 0.004 0.002`,
		at:     2 * time.Minute,
	},
	{
		name:  "5% of reserves RESULT_UNKNOWN",
		alert: "SeckillReserveServerErrors",
		series: `seckill_http_requests_total{instance="a:8080",route="reserve",outcome="ACCEPTED"} 0+570x20
seckill_http_requests_total{instance="a:8080",route="reserve",outcome="RESULT_UNKNOWN"} 0+30x20`,
		at:     8 * time.Minute,
		firing: []map[string]string{{"instance": "a:8080"}},
	},
	{
		name:  "a flash sale's sold-out and 429 answers are no server errors",
		alert: "SeckillReserveServerErrors",
		series: `seckill_http_requests_total{instance="a:8080",route="reserve",outcome="ACCEPTED"} 0+10x20
seckill_http_requests_total{instance="a:8080",route="reserve",outcome="SOLD_OUT"} 0+9000x20
seckill_http_requests_total{instance="a:8080",route="reserve",outcome="QUEUE_FULL"} 0+3000x20
seckill_http_requests_total{instance="a:8080",route="reserve",outcome="RESULT_UNKNOWN"} 0+1x20`,
		at: 8 * time.Minute,
	},
	{
		name:  "fsyncs of 100 ms",
		alert: "SeckillFsyncSlow",
		series: `seckill_wal_fsync_seconds_bucket{instance="a:8080",le="0.001"} 0+0x30
seckill_wal_fsync_seconds_bucket{instance="a:8080",le="0.05"} 0+0x30
seckill_wal_fsync_seconds_bucket{instance="a:8080",le="0.25"} 0+100x30
seckill_wal_fsync_seconds_bucket{instance="a:8080",le="+Inf"} 0+100x30`,
		at:     14 * time.Minute,
		firing: []map[string]string{{"instance": "a:8080"}},
	},
	{
		name:  "fsyncs under a millisecond",
		alert: "SeckillFsyncSlow",
		series: `seckill_wal_fsync_seconds_bucket{instance="a:8080",le="0.001"} 0+100x30
seckill_wal_fsync_seconds_bucket{instance="a:8080",le="0.05"} 0+100x30
seckill_wal_fsync_seconds_bucket{instance="a:8080",le="0.25"} 0+100x30
seckill_wal_fsync_seconds_bucket{instance="a:8080",le="+Inf"} 0+100x30`,
		at: 14 * time.Minute,
	},
	{
		name:   "a snapshot failed",
		alert:  "SeckillSnapshotsFailing",
		series: `seckill_snapshot_failures_total{instance="a:8080"} 0 0 0 1 1 1`,
		at:     150 * time.Second,
		firing: []map[string]string{{"instance": "a:8080"}},
	},
	{
		name:   "snapshots that succeed",
		alert:  "SeckillSnapshotsFailing",
		series: `seckill_snapshot_failures_total{instance="a:8080"} 0 0 0 0 0 0`,
		at:     150 * time.Second,
	},
	{
		name:   "a payment after close",
		alert:  "SeckillRefundsRequired",
		series: `seckill_sku_refunds_required{instance="a:8080",campaign_id="c",sku_id="s1"} 0 0 1 1 1`,
		at:     2 * time.Minute,
		firing: []map[string]string{{"instance": "a:8080", "campaign_id": "c", "sku_id": "s1"}},
	},
	{
		name:   "refunds owed long ago are not news",
		alert:  "SeckillRefundsRequired",
		series: `seckill_sku_refunds_required{instance="a:8080",campaign_id="c",sku_id="s1"} 2+0x60`,
		at:     30 * time.Minute,
	},
	{
		name:  "a replica set whose replicas all answer as standby or candidate",
		alert: "SeckillReplicaSetWithoutPrimary",
		series: replicaRoles("rs1", "a", "standby", 10) + "\n" + replicaRoles("rs1", "b", "candidate", 10) + "\n" +
			replicaRoles("rs2", "c", "primary", 10) + "\n" + replicaRoles("rs2", "d", "standby", 10),
		at:     4 * time.Minute,
		firing: []map[string]string{{"replica_set": "rs1"}},
	},
	{
		name:   "a replica set with its primary",
		alert:  "SeckillReplicaSetWithoutPrimary",
		series: replicaRoles("rs1", "a", "primary", 10) + "\n" + replicaRoles("rs1", "b", "standby", 10),
		at:     4 * time.Minute,
	},
	{
		name:  "a primary whose sync set emptied",
		alert: "SeckillPrimaryWithoutSyncStandby",
		series: replicaRoles("rs1", "a", "primary", 10) + "\n" + replicaRoles("rs1", "b", "standby", 10) + "\n" +
			`seckill_replica_sync_standby{instance="a:8080",replica_set="rs1",replica="a",standby="b"} 1 1 1 stale`,
		at:     4 * time.Minute,
		firing: []map[string]string{{"replica_set": "rs1", "replica": "a"}},
	},
	{
		name:  "a primary with its sync standby",
		alert: "SeckillPrimaryWithoutSyncStandby",
		series: replicaRoles("rs1", "a", "primary", 10) + "\n" + replicaRoles("rs1", "b", "standby", 10) + "\n" +
			`seckill_replica_sync_standby{instance="a:8080",replica_set="rs1",replica="a",standby="b"} 1+0x10`,
		at: 4 * time.Minute,
	},
	{
		name:   "a single seckilld, no replica set",
		alert:  "SeckillPrimaryWithoutSyncStandby",
		series: `seckill_sku_unavailable{instance="a:8080",campaign_id="c",sku_id="s1"} 0+0x10`,
		at:     4 * time.Minute,
	},
	{
		name:   "a standby disconnected for 2 minutes",
		alert:  "SeckillStandbyDisconnected",
		series: `seckill_replica_standby_connected{instance="a:8080",standby="b"} 1 1 0 0 0 0 0 0`,
		at:     3 * time.Minute,
		firing: []map[string]string{{"instance": "a:8080", "standby": "b"}},
	},
	{
		name:   "a standby that reconnected at once",
		alert:  "SeckillStandbyDisconnected",
		series: `seckill_replica_standby_connected{instance="a:8080",standby="b"} 1 1 0 1 1 1 1 1`,
		at:     3 * time.Minute,
	},
	{
		name:   "a standby a minute behind",
		alert:  "SeckillStandbyLagging",
		series: `seckill_replica_standby_lag_seconds{instance="a:8080",standby="b"} 0 0 30 60 90 120 150`,
		at:     3 * time.Minute,
		firing: []map[string]string{{"instance": "a:8080", "standby": "b"}},
	},
	{
		name:   "a standby behind by a batch now and then",
		alert:  "SeckillStandbyLagging",
		series: `seckill_replica_standby_lag_seconds{instance="a:8080",standby="b"} 0 0.01 0 0.2 0 0 0`,
		at:     3 * time.Minute,
	},
	{
		name:   "standbys refusing a deposed primary",
		alert:  "SeckillDeposedPrimaryRunning",
		series: `seckill_replica_deposed_refusals_total{instance="a:8080"} 0 0 2 3 3`,
		at:     2 * time.Minute,
		firing: []map[string]string{{"instance": "a:8080"}},
	},
	{
		name:   "a primary its standbys follow",
		alert:  "SeckillDeposedPrimaryRunning",
		series: `seckill_replica_deposed_refusals_total{instance="a:8080"} 0+0x10`,
		at:     4 * time.Minute,
	},
	{
		name:   "a cell cut from etcd",
		alert:  "SeckillCellLedgerUnreachable",
		series: `seckill_cell_ledger_reachable{instance="c1:8080",cell="c1",campaign_id="c",sku_id="s1"} 1 0 0 0 0 0`,
		at:     150 * time.Second,
		firing: []map[string]string{{"instance": "c1:8080", "cell": "c1", "campaign_id": "c", "sku_id": "s1"}},
	},
	{
		name:   "a cell that reaches etcd",
		alert:  "SeckillCellLedgerUnreachable",
		series: `seckill_cell_ledger_reachable{instance="c1:8080",cell="c1",campaign_id="c",sku_id="s1"} 1+0x5`,
		at:     150 * time.Second,
	},
	{
		name:   "a cell waiting for its top-up",
		alert:  "SeckillCellTopUpStuck",
		series: `seckill_cell_top_up_pending{instance="c1:8080",cell="c1",campaign_id="c",sku_id="s1"} 0 1+0x8`,
		at:     4 * time.Minute,
		firing: []map[string]string{{"instance": "c1:8080", "cell": "c1", "campaign_id": "c", "sku_id": "s1"}},
	},
	{
		name:   "a cell that has waited 90 s for its top-up",
		alert:  "SeckillCellTopUpStuck",
		series: `seckill_cell_top_up_pending{instance="c1:8080",cell="c1",campaign_id="c",sku_id="s1"} 0 1 1 1 1`,
		at:     2 * time.Minute,
	},
	{
		name:   "seckill-orders failing again and again",
		alert:  "SeckillOrdersFailing",
		series: `seckill_orders_errors_total{instance="o:9090"} 0 1 2 3 4 5 6`,
		at:     3 * time.Minute,
		firing: []map[string]string{{"instance": "o:9090"}},
	},
	{
		name:   "seckill-orders retrying once",
		alert:  "SeckillOrdersFailing",
		series: `seckill_orders_errors_total{instance="o:9090"} 0 1 1 1 1 1 1`,
		at:     3 * time.Minute,
	},
	{
		name:  "orders a minute behind the sale",
		alert: "SeckillOrdersLagging",
		series: `seckill_orders_lag_seconds_bucket{instance="o:9090",le="1.024"} 0+0x30
seckill_orders_lag_seconds_bucket{instance="o:9090",le="65.536"} 0+50x30
seckill_orders_lag_seconds_bucket{instance="o:9090",le="+Inf"} 0+50x30`,
		at:     14 * time.Minute,
		firing: []map[string]string{{"instance": "o:9090"}},
	},
	{
		name:  "orders within a second",
		alert: "SeckillOrdersLagging",
		series: `seckill_orders_lag_seconds_bucket{instance="o:9090",le="1.024"} 0+50x30
seckill_orders_lag_seconds_bucket{instance="o:9090",le="65.536"} 0+50x30
seckill_orders_lag_seconds_bucket{instance="o:9090",le="+Inf"} 0+50x30`,
		at: 14 * time.Minute,
	},
}

// replicaRoles is the seckill_replica_role series of a replica in role,
// n samples.
func replicaRoles(set, replica, role string, n int) string {
	var b strings.Builder
	for _, r := range []string{"primary", "standby", "candidate"} {
		v := "0"
		if r == role {
			v = "1"
		}
		b.WriteString(`seckill_replica_role{instance="` + replica + `:8080",replica_set="` + set + `",replica="` + replica + `",role="` + r + `"} ` + v + "+0x" + strconv.Itoa(n) + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Every alert fires on the series of its case and on no others, with the
// labels the case names, its severity, and annotations whose templates
// expand.
func TestAlertsFireWhenTheyShould(t *testing.T) {
	byName := loadRules(t)
	tested := map[string][2]bool{}
	for _, c := range alertCases {
		t.Run(c.alert+"/"+c.name, func(t *testing.T) {
			r := byName[c.alert]
			if r == nil {
				t.Fatalf("no alert %s in %s", c.alert, rulesFile)
			}
			got := evaluate(t, r, c.series, c.at)
			var want []string
			for _, l := range c.firing {
				want = append(want, labels.FromMap(l).String())
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("firing at %s: %v, want %v", c.at, got, want)
			}
		})
		seen := tested[c.alert]
		seen[min(len(c.firing), 1)] = true
		tested[c.alert] = seen
	}
	for name := range byName {
		if seen := tested[name]; !seen[0] || !seen[1] {
			t.Errorf("alert %s has no case where it fires and one where it does not (%v)", name, seen)
		}
	}
}

// evaluate runs r every evaluationInterval from time 0 to at over series
// and returns the label sets of the alerts firing then, without alertname
// and severity, sorted.
func evaluate(t *testing.T, r *rulefmt.Rule, series string, at time.Duration) []string {
	t.Helper()
	var firing []string
	for _, a := range evalAlert(t, r, series, at) {
		if !a.firing {
			continue
		}
		if a.labels.Get("severity") != r.Labels["severity"] || a.labels.Get("alertname") != r.Alert {
			t.Errorf("alert labels %s: want alertname %s and severity %s", a.labels, r.Alert, r.Labels["severity"])
		}
		for name, v := range a.annotations {
			if strings.Contains(v, "<no value>") {
				t.Errorf("annotation %s of %s: %s", name, r.Alert, v)
			}
		}
		for _, text := range r.Annotations {
			for _, m := range labelReference.FindAllStringSubmatch(text, -1) {
				if !a.labels.Has(m[1]) {
					t.Errorf("%s's annotation %q names label %s, which the alert has not (%s)", r.Alert, text, m[1], a.labels)
				}
			}
		}
		b := labels.NewBuilder(a.labels)
		b.Del("alertname", "severity")
		firing = append(firing, b.Labels().String())
	}
	slices.Sort(firing)
	return firing
}

// labelReference is a label an annotation's template reads.
var labelReference = regexp.MustCompile(`\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)`)

// Every alert says how grave it is and where its runbook is.
func TestAlertsCarrySeverityAndRunbook(t *testing.T) {
	runbook, err := os.ReadFile("../../docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range loadRules(t) {
		if s := r.Labels["severity"]; s != "page" && s != "ticket" {
			t.Errorf("%s: severity %q, want page or ticket", name, s)
		}
		if r.Annotations["summary"] == "" || r.Annotations["runbook"] != "docs/operating.md#alerts" {
			t.Errorf("%s: annotations %v, want a summary and runbook docs/operating.md#alerts", name, r.Annotations)
		}
		if !strings.Contains(string(runbook), "`"+name+"`") {
			t.Errorf("%s: not in docs/operating.md's alerts table", name)
		}
	}
}

// Every metric an alert reads, every label it matches or groups by, and
// every label value it matches is written in the code that exports them
// (seckill's Go sources outside tests): a metric, a route or an outcome
// renamed in the code breaks this test rather than an alert that would
// silently never fire.
func TestAlertsReadWhatTheCodeExports(t *testing.T) {
	literals := codeLiterals(t, "../..")
	for name, r := range loadRules(t) {
		expr, err := stockParser.ParseExpr(r.Expr)
		if err != nil {
			t.Fatal(err)
		}
		parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
			switch n := node.(type) {
			case *parser.VectorSelector:
				if !literals[exportedName(n.Name, literals)] {
					t.Errorf("%s reads %s, which no code exports", name, n.Name)
				}
				for _, m := range n.LabelMatchers {
					if m.Name == model.MetricNameLabel {
						continue
					}
					if !literals[m.Name] {
						t.Errorf("%s matches label %s, which no code exports", name, m.Name)
					}
					for _, v := range strings.Split(m.Value, "|") {
						if !literals[v] {
							t.Errorf("%s matches %s=%q, a value no code writes", name, m.Name, v)
						}
					}
				}
			case *parser.AggregateExpr:
				for _, l := range n.Grouping {
					if l != "instance" && l != "le" && !literals[l] {
						t.Errorf("%s groups by %s, a label no code exports", name, l)
					}
				}
			case *parser.BinaryExpr:
				if n.VectorMatching != nil {
					for _, l := range n.VectorMatching.MatchingLabels {
						if !literals[l] {
							t.Errorf("%s matches on %s, a label no code exports", name, l)
						}
					}
				}
			}
			return nil
		})
	}
}

// exportedName is the family name of a series name: a histogram's
// _bucket, _sum and _count series belong to the name the code registers.
func exportedName(series string, literals map[string]bool) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(series, suffix); ok && literals[base] {
			return base
		}
	}
	return series
}

// stringLiteral is a Go interpreted string literal without escapes.
var stringLiteral = regexp.MustCompile(`"([^"\\\n]*)"`)

// codeLiterals returns the contents of the string literals of the Go
// files under root that are no tests, outside the nested modules.
func codeLiterals(t *testing.T, root string) map[string]bool {
	t.Helper()
	literals := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // a nested module: not the engine's code
				}
				if strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range stringLiteral.FindAllSubmatch(src, -1) {
			literals[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !literals["seckill_sku_unavailable"] {
		t.Fatalf("no seckill metric found in the Go sources under %s", root)
	}
	return literals
}
