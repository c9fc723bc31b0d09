package bench

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

func sampleResult() *Result {
	recorder := NewLatencyRecorder(1)
	for i := 1; i <= 100; i++ {
		recorder.Record(0, OutcomeAccepted, 0)
	}
	set := recorder.Merge()
	return &Result{
		Scenario: "seed", Target: "http://127.0.0.1:8080", CampaignID: "bench-seed-x", Loop: "closed",
		Concurrency: 4, SKUs: 1, SaleLimit: 10, Attempts: 100, Requests: 100, Accepted: 10,
		Outcomes:           map[string]int64{"accepted": 10, "sold_out": 90},
		LatencyMS:          Summarize(set.Overall),
		LatencyByOutcomeMS: set.Summaries(),
		LatencyCurvesMS:    set.Curves(),
		Timeline: []TimelinePoint{
			{Second: 1, ThroughputRPS: 60, Outcomes: map[string]int64{"accepted": 10, "sold_out": 50}},
			{Second: 2, ThroughputRPS: 40, Outcomes: map[string]int64{"sold_out": 40}},
		},
		Audit:    &AuditSummary{OK: true, SaleLimit: 10, Reserved: 10, Violations: []string{}},
		Failures: []string{"accepted <script>alert(1)</script>"},
	}
}

// remoteAsset matches any element that would load something from the network.
var remoteAsset = regexp.MustCompile(`(?i)<(script|link|img|iframe)[^>]*\s(src|href)\s*=\s*["']?\s*(https?:)?//`)

func TestReportIsSelfContained(t *testing.T) {
	var out bytes.Buffer
	if err := RenderReport(&out, sampleResult()); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	if match := remoteAsset.FindString(page); match != "" {
		t.Fatalf("the report loads %q from the network", match)
	}
	if regexp.MustCompile(`(?i)@import|url\(\s*["']?https?:`).MatchString(page) {
		t.Fatal("the report's style loads from the network")
	}
	for _, want := range []string{
		"echarts.init(",               // the charts are set up
		`id="throughput"`,             // throughput over time
		`id="latency"`,                // latency distribution
		"Throughput over time",        //
		"Latency distribution",        //
		"<th>oversold</th>",           // the summary table
		"&lt;script&gt;alert(1)",      // text is escaped
		"Licensed to the Apache Soft", // the inlined library keeps its licence header
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if len(page) < len(echartsJS) {
		t.Errorf("report is %d bytes, smaller than the library it inlines", len(page))
	}
}

// The report is complete when printed or captured (no animation), draws
// the "all" line over the others, leaves out the partial last interval,
// and says when the SKU sold out and where the run was measured.
func TestReportStaticAndDescribed(t *testing.T) {
	r := sampleResult()
	r.Timeline = append(r.Timeline, TimelinePoint{Second: 2.3, WidthS: 0.3, Partial: true, ThroughputRPS: 150, Outcomes: map[string]int64{"sold_out": 45}})
	r.SoldOutAfterS = 0.41
	r.Environment = &Environment{CPUModel: "Test CPU 9000", Cores: 2, MemoryBytes: 4 << 30, OS: "linux/amd64", GoVersion: "go1.99",
		Commit: "abc123", ServerFlags: "--fsync always", LoadAverageBefore: [3]float64{3.5}, Warnings: []string{"the machine was busy"}}
	var out bytes.Buffer
	if err := RenderReport(&out, r); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	for _, want := range []string{`"animation":false`, "10 units sold in 0.41 s", "Test CPU 9000, 2 cores, 4.0 GiB memory",
		"commit abc123", "--fsync always", "3.50 /", "the machine was busy"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, chart := range []string{"throughput", "latency", "outcomes"} {
		if !strings.Contains(page, "option_"+chart+` = {"animation":false`) {
			t.Errorf("animation left on in the %s chart", chart)
		}
	}
	throughput := page[strings.Index(page, `id="throughput"`):strings.Index(page, `id="latency"`)]
	if strings.Contains(throughput, `"2.3"`) || strings.Contains(throughput, "150") {
		t.Errorf("the partial last interval is drawn")
	}
	if all, sold := strings.LastIndex(throughput, `"name":"all"`), strings.LastIndex(throughput, `"name":"sold_out"`); all < sold {
		t.Errorf("the all line is drawn under the others (at %d, sold_out at %d)", all, sold)
	}
}
