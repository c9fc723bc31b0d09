// Package metricsdoc renders Prometheus metric families as the Markdown
// table of docs/reference/: one row per family (name, type, label names,
// help), sorted by name. The docs tests render what a running seckilld
// exports and what a cell registers, and compare it with the checked-in
// reference, so a metric added, removed or renamed without `make docs`
// fails the suite.
package metricsdoc

import (
	"fmt"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// open are the labels listed without their values: ids an operator defines
// (campaign_id, sku_id, cell), and outcome, whose series are made as
// answers happen (a route's error reasons and states; see
// docs/api.md#errors) beside those made at start.
var open = map[string]bool{"campaign_id": true, "sku_id": true, "cell": true, "outcome": true}

// Table returns the rows of families whose names do not start with one of
// skip, sorted by name, as a Markdown table. Label names are the union over
// the family's series, each followed by the values the series show unless
// the label is open.
func Table(families []*dto.MetricFamily, skip ...string) string {
	sorted := append([]*dto.MetricFamily(nil), families...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].GetName() < sorted[j].GetName() })
	var b strings.Builder
	b.WriteString("| metric | type | labels | help |\n|---|---|---|---|\n")
rows:
	for _, f := range sorted {
		for _, prefix := range skip {
			if strings.HasPrefix(f.GetName(), prefix) {
				continue rows
			}
		}
		labels := map[string]map[string]bool{}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] == nil {
					labels[l.GetName()] = map[string]bool{}
				}
				labels[l.GetName()][l.GetValue()] = true
			}
		}
		names := make([]string, 0, len(labels))
		for l, values := range labels {
			name := "`" + l + "`"
			if !open[l] {
				vs := make([]string, 0, len(values))
				for v := range values {
					vs = append(vs, v)
				}
				sort.Strings(vs)
				name += " (" + strings.Join(vs, ", ") + ")"
			}
			names = append(names, name)
		}
		sort.Strings(names)
		help := strings.ReplaceAll(f.GetHelp(), "|", `\|`)
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", f.GetName(), strings.ToLower(f.GetType().String()),
			strings.Join(names, ", "), help)
	}
	return b.String()
}
