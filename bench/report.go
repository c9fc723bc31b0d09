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

// throughputChart draws answers per second over time, total and per outcome.
func throughputChart(r *Result) *charts.Line {
	line := charts.NewLine()
	line.SetGlobalOptions(
		charts.WithInitializationOpts(chartSize("throughput")),
		charts.WithTitleOpts(opts.Title{Title: "Throughput over time", Subtitle: "answers per second"}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "bottom"}),
		charts.WithXAxisOpts(opts.XAxis{Name: "s"}),
		charts.WithYAxisOpts(opts.YAxis{Name: "req/s"}),
	)
	seconds := make([]string, len(r.Timeline))
	total := make([]opts.LineData, len(r.Timeline))
	byOutcome := map[string][]opts.LineData{}
	previous := 0.0
	for i, point := range r.Timeline {
		seconds[i] = strconv.FormatFloat(point.Second, 'f', 1, 64)
		total[i] = opts.LineData{Value: round1(point.ThroughputRPS)}
		width := point.Second - previous
		previous = point.Second
		for name, count := range point.Outcomes {
			if byOutcome[name] == nil {
				byOutcome[name] = make([]opts.LineData, len(r.Timeline))
				for j := range byOutcome[name] {
					byOutcome[name][j] = opts.LineData{Value: 0}
				}
			}
			if width > 0 {
				byOutcome[name][i] = opts.LineData{Value: round1(float64(count) / width)}
			}
		}
	}
	line.SetXAxis(seconds).AddSeries("all", total, seriesColor("all"))
	for _, name := range outcomeOrder(byOutcome) {
		line.AddSeries(name, byOutcome[name], seriesColor(name))
	}
	return line
}

// latencyChart draws latency against percentile, overall and per outcome,
// on a log scale.
func latencyChart(r *Result) *charts.Line {
	line := charts.NewLine()
	line.SetGlobalOptions(
		charts.WithInitializationOpts(chartSize("latency")),
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
	for _, name := range append([]string{"all"}, outcomeOrder(r.LatencyCurvesMS)...) {
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
		charts.WithInitializationOpts(chartSize("outcomes")),
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
		{"sold_out", groupDigits(r.SoldOut)},
		{"already_purchased", groupDigits(r.AlreadyPurchased)},
		{"queue_full", groupDigits(r.QueueFull)},
		{"errors", groupDigits(r.Errors)},
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
	return rows
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
