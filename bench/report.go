package bench

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"os"
	"sort"
	"strconv"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
	"github.com/go-echarts/go-echarts/v2/render"
)

// echartsJS is Apache ECharts 5.6.0 (dist/echarts.min.js of the npm package
// "echarts"; licence and notice beside it in assets/). It is inlined into
// every report so that the report opens offline: no script, style or font
// is fetched from the network.
//
//go:embed assets/echarts.min.js
var echartsJS string

// WriteReport writes the HTML report of a result to path.
func WriteReport(path string, r *Result) error {
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := RenderReport(file, r); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}

// RenderReport writes a self-contained HTML page: throughput over time,
// latency distribution and outcome counts as ECharts charts, then the
// summary table.
func RenderReport(w io.Writer, r *Result) error {
	page := reportPage{
		Title:    fmt.Sprintf("seckill-bench %s — %s", r.Scenario, r.CampaignID),
		Result:   r,
		ECharts:  template.JS(echartsJS),
		Rows:     summaryRows(r),
		Latency:  latencyRows(r),
		Failures: r.Failures,
	}
	for _, chart := range []render.Renderer{throughputChart(r), latencyChart(r), outcomeChart(r)} {
		// The snippet is the chart's <div> and its setOption script, without
		// go-echarts' page header and its <script src> of a remote asset host.
		snippet := chart.RenderSnippet()
		page.Charts = append(page.Charts, template.HTML(snippet.Element+snippet.Script))
	}
	return reportTemplate.Execute(w, page)
}

type reportPage struct {
	Title    string
	Result   *Result
	ECharts  template.JS
	Charts   []template.HTML
	Rows     [][2]string
	Latency  [][]string
	Failures []string
}

func chartSize(id string) opts.Initialization {
	return opts.Initialization{ChartID: id, Width: "1000px", Height: "380px", Renderer: "svg"}
}

// noAnimation draws each chart complete at once: an animated chart that
// is printed or captured (a headless browser's screenshot) shows it half
// drawn.
var noAnimation = charts.WithAnimation(false)

// throughputChart draws answers per second over time, total and per
// outcome, one point per whole second (the partial last interval is left
// out: a rate over a fraction of a second is noise). The "all" line is
// added last, so it is drawn over the others.
func throughputChart(r *Result) *charts.Line {
	line := charts.NewLine()
	line.SetGlobalOptions(
		charts.WithInitializationOpts(chartSize("throughput")), noAnimation,
		charts.WithTitleOpts(opts.Title{Title: "Throughput over time", Subtitle: "answers per second"}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "bottom"}),
		charts.WithXAxisOpts(opts.XAxis{Name: "s"}),
		charts.WithYAxisOpts(opts.YAxis{Name: "req/s"}),
	)
	timeline := r.Timeline
	if n := len(timeline); n > 0 && timeline[n-1].Partial {
		timeline = timeline[:n-1]
	}
	seconds := make([]string, len(timeline))
	total := make([]opts.LineData, len(timeline))
	byOutcome := map[string][]opts.LineData{}
	for i, point := range timeline {
		seconds[i] = strconv.FormatFloat(point.Second, 'f', 0, 64)
		total[i] = opts.LineData{Value: round1(point.ThroughputRPS)}
		for name, count := range point.Outcomes {
			if byOutcome[name] == nil {
				byOutcome[name] = make([]opts.LineData, len(timeline))
				for j := range byOutcome[name] {
					byOutcome[name][j] = opts.LineData{Value: 0}
				}
			}
			if point.WidthS > 0 {
				byOutcome[name][i] = opts.LineData{Value: round1(float64(count) / point.WidthS)}
			}
		}
	}
	line.SetXAxis(seconds)
	for _, name := range outcomeOrder(byOutcome) {
		line.AddSeries(name, byOutcome[name], seriesColor(name))
	}
	line.AddSeries("all", total, seriesColor("all"))
	return line
}

// latencyChart draws latency against percentile, overall and per outcome,
// on a log scale.
func latencyChart(r *Result) *charts.Line {
	line := charts.NewLine()
	line.SetGlobalOptions(
		charts.WithInitializationOpts(chartSize("latency")), noAnimation,
		charts.WithTitleOpts(opts.Title{Title: "Latency distribution", Subtitle: "ms at each percentile (HDR histogram)"}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "bottom"}),
		charts.WithXAxisOpts(opts.XAxis{Name: "percentile"}),
		charts.WithYAxisOpts(opts.YAxis{Name: "ms", Type: "log"}),
	)
	labels := make([]string, len(curveQuantiles))
	for i, q := range curveQuantiles {
		labels[i] = strconv.FormatFloat(q, 'f', -1, 64)
	}
	line.SetXAxis(labels)
	for _, name := range append(outcomeOrder(r.LatencyCurvesMS), "all") { // "all" last: drawn on top
		curve, ok := r.LatencyCurvesMS[name]
		if !ok {
			continue
		}
		data := make([]opts.LineData, len(curve))
		for i, point := range curve {
			data[i] = opts.LineData{Value: point.LatencyMS}
		}
		line.AddSeries(name, data, seriesColor(name))
	}
	return line
}

// outcomeChart draws the count of each outcome.
func outcomeChart(r *Result) *charts.Bar {
	bar := charts.NewBar()
	bar.SetGlobalOptions(
		charts.WithInitializationOpts(chartSize("outcomes")), noAnimation,
		charts.WithTitleOpts(opts.Title{Title: "Answers by outcome", Subtitle: "log scale"}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true)}),
		charts.WithYAxisOpts(opts.YAxis{Type: "log"}),
	)
	names := outcomeOrder(r.Outcomes)
	data := make([]opts.BarData, len(names))
	for i, name := range names {
		data[i] = opts.BarData{Value: r.Outcomes[name], ItemStyle: &opts.ItemStyle{Color: outcomeColors[name]}}
	}
	bar.SetXAxis(names).AddSeries("answers", data)
	return bar
}

// outcomeColors gives each outcome the same colour in every chart.
var outcomeColors = map[string]string{
	"all":                            "#333333",
	OutcomeAccepted.String():         "#2e7d32",
	OutcomeSoldOut.String():          "#1565c0",
	OutcomeAlreadyPurchased.String(): "#6a1b9a",
	OutcomeRequestIDReused.String():  "#ad1457",
	OutcomeQueueFull.String():        "#ef6c00",
	OutcomeNotStarted.String():       "#8d6e63",
	OutcomeEnded.String():            "#5d4037",
	OutcomePaused.String():           "#00838f",
	OutcomeUnavailable.String():      "#c62828",
	OutcomeResultUnknown.String():    "#f9a825",
	OutcomeBadRequest.String():       "#757575",
	OutcomeError.String():            "#d50000",
}

// seriesColor sets a series' line and point colour by its outcome.
func seriesColor(name string) charts.SeriesOpts {
	color := outcomeColors[name]
	return func(s *charts.SingleSeries) {
		charts.WithLineStyleOpts(opts.LineStyle{Color: color})(s)
		charts.WithItemStyleOpts(opts.ItemStyle{Color: color})(s)
	}
}

// outcomeOrder returns the outcome names among m's keys in the order of
// the Outcome constants ("all" and unknown keys left out).
func outcomeOrder[V any](m map[string]V) []string {
	var names []string
	for outcome := Outcome(0); outcome < OutcomeCount; outcome++ {
		if _, ok := m[outcome.String()]; ok {
			names = append(names, outcome.String())
		}
	}
	return names
}

func round1(value float64) float64 {
	return float64(int64(value*10+0.5)) / 10
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}

// summaryRows is the report's table of figures.
func summaryRows(r *Result) [][2]string {
	verdict := "PASS"
	if !r.Passed {
		verdict = "FAIL"
	}
	loop := fmt.Sprintf("closed, concurrency %d", r.Concurrency)
	if r.Loop == "open" {
		loop = fmt.Sprintf("open, %.0f req/s, ≤ %d in flight", r.RateRPS, r.Concurrency)
	}
	rows := [][2]string{
		{"verdict", verdict},
		{"scenario", r.Scenario},
		{"target", r.Target},
		{"campaign", r.CampaignID},
		{"loop", loop},
		{"SKUs / sale_limit", fmt.Sprintf("%d / %s", r.SKUs, groupDigits(r.SaleLimit))},
		{"attempts / requests", fmt.Sprintf("%s / %s", groupDigits(r.Attempts), groupDigits(r.Requests))},
		{"elapsed", fmt.Sprintf("%.2f s", r.ElapsedS)},
		{"throughput", fmt.Sprintf("%s req/s", groupDigits(int64(r.ThroughputRPS)))},
		{"accepted (units / answers)", fmt.Sprintf("%s / %s", groupDigits(r.Accepted), groupDigits(r.AcceptedResponses))},
		{"sold out", soldOutLine(r)},
		{"sold_out", groupDigits(r.SoldOut)},
		{"already_purchased", groupDigits(r.AlreadyPurchased)},
		{"queue_full", groupDigits(r.QueueFull)},
		{"errors", groupDigits(r.Errors)},
		{"unanswered attempts", groupDigits(r.Unanswered)},
		{"oversold", groupDigits(r.Oversold)},
		{"duplicate_winners", groupDigits(r.DuplicateWinners)},
		{"token_reused", groupDigits(r.TokenReused)},
		{"retry_mismatches", groupDigits(r.RetryMismatches)},
		{"undersold", groupDigits(r.Undersold)},
	}
	if a := r.Audit; a != nil {
		status := "ok"
		if !a.OK {
			status = "FAILED"
		}
		if a.Error != "" {
			status += ": " + a.Error
		}
		rows = append(rows,
			[2]string{"audit", status},
			[2]string{"audit available / reserved / confirmed", fmt.Sprintf("%s / %s / %s", groupDigits(a.Available), groupDigits(a.Reserved), groupDigits(a.Confirmed))},
			[2]string{"audit violations", fmt.Sprint(len(a.Violations))},
		)
	}
	if p := r.Payflow; p != nil {
		rows = append(rows, [2]string{"payflow", p.line()})
	}
	if e := r.Environment; e != nil {
		rows = append(rows,
			[2]string{"started", r.StartedAt.UTC().Format("2006-01-02 15:04:05 MST")},
			[2]string{"machine", fmt.Sprintf("%s, %d cores, %.1f GiB memory", orUnknown(e.CPUModel), e.Cores, float64(e.MemoryBytes)/(1<<30))},
			[2]string{"software", fmt.Sprintf("%s; %s; commit %s", e.OS, e.GoVersion, e.Commit)},
			[2]string{"server flags", e.ServerFlags},
			[2]string{"load average before / after", fmt.Sprintf("%.2f / %.2f", e.LoadAverageBefore[0], e.LoadAverageAfter[0])},
			[2]string{"CPU-s during the run", fmt.Sprintf("machine %.1f, client %.1f, server %s, others %.1f", e.MachineCPUS, e.ClientCPUS, serverCPU(e), e.OtherCPUS)},
		)
		for _, w := range e.Warnings {
			rows = append(rows, [2]string{"warning", w})
		}
	}
	return rows
}

// soldOutLine says when the sale sold out ("10,000 units sold in 0.41 s").
func soldOutLine(r *Result) string {
	if r.SoldOutAfterS <= 0 {
		return fmt.Sprintf("no: %s of %s units sold", groupDigits(r.Accepted), groupDigits(r.SaleLimit))
	}
	return fmt.Sprintf("%s units sold in %.2f s", groupDigits(r.Accepted), r.SoldOutAfterS)
}

// latencyRows is the report's latency table.
func latencyRows(r *Result) [][]string {
	row := func(name string, s LatencySummary) []string {
		return []string{name, groupDigits(s.Count), fmt.Sprintf("%.3f", s.P50), fmt.Sprintf("%.3f", s.P90),
			fmt.Sprintf("%.3f", s.P99), fmt.Sprintf("%.3f", s.P999), fmt.Sprintf("%.3f", s.Max)}
	}
	rows := [][]string{row("all", r.LatencyMS)}
	for _, name := range sortedKeys(r.LatencyByOutcomeMS) {
		rows = append(rows, row(name, r.LatencyByOutcomeMS[name]))
	}
	return rows
}

var reportTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
td, th { border: 1px solid #ccc; padding: 4px 10px; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.fail { color: #b00; font-weight: bold; }
.pass { color: #070; font-weight: bold; }
.container { margin: 1em 0; }
</style>
<script type="text/javascript">{{.ECharts}}</script>
</head>
<body>
<h1>{{.Title}}</h1>
{{if .Result.Passed}}<p class="pass">PASS</p>{{else}}<p class="fail">FAIL</p><ul>{{range .Failures}}<li class="fail">{{.}}</li>{{end}}</ul>{{end}}
{{range .Charts}}{{.}}
{{end}}
<h2>Summary</h2>
<table>
{{range .Rows}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>
{{end}}</table>
<h2>Latency (ms)</h2>
<table>
<tr><th>outcome</th><th>count</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th></tr>
{{range .Latency}}<tr>{{range $i, $cell := .}}{{if eq $i 0}}<th>{{$cell}}</th>{{else}}<td class="n">{{$cell}}</td>{{end}}{{end}}</tr>
{{end}}</table>
{{with .Result.Audit}}{{if .Violations}}<h2>Audit violations</h2><ul>{{range .Violations}}<li>{{.}}</li>{{end}}</ul>{{end}}{{end}}
{{if .Result.Examples}}<h2>Examples</h2><ul>{{range .Result.Examples}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{with .Result.Payflow}}{{if .MismatchExamples}}<h2>Payflow mismatches</h2><ul>{{range .MismatchExamples}}<li>{{.}}</li>{{end}}</ul>{{end}}{{end}}
</body>
</html>
`))
