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
