package bench

import (
	"context"
	"fmt"
	"sync"
)

// Audit bounds.
const (
	auditWorkers     = 16
	maxAuditFindings = 50
)

// skuAudit is one SKU's audit, or why it could not be read.
type skuAudit struct {
	report AuditReport
	err    error
}

// auditSKUs reads the audit of every SKU (of campaign campaignIDs[i]), a
// few at a time.
func auditSKUs(ctx context.Context, client *Client, campaignIDs []string, skus []SKUSpec) []skuAudit {
	audits := make([]skuAudit, len(skus))
	next := make(chan int)
	var workers sync.WaitGroup
	for range min(auditWorkers, len(skus)) {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for i := range next {
				report, err := client.Audit(ctx, campaignIDs[i], skus[i].SKUID)
				audits[i] = skuAudit{report: report, err: err}
			}
		}()
	}
	for i := range skus {
		next <- i
	}
	close(next)
	workers.Wait()
	return audits
}

// checkAudit lists what is wrong with one SKU's audit: the server's own
// violations and the tool's recomputation of the invariant.
func checkAudit(spec SKUSpec, report AuditReport) []string {
	var findings []string
	if !report.InvariantOK {
		findings = append(findings, "invariant_ok is false")
	}
	for _, violation := range report.Violations {
		findings = append(findings, "server: "+string(violation))
	}
	if sum := report.Available + report.Reserved + report.Confirmed; sum != report.SaleLimit {
		findings = append(findings, fmt.Sprintf("available %d + reserved %d + confirmed %d = %d != sale_limit %d",
			report.Available, report.Reserved, report.Confirmed, sum, report.SaleLimit))
	}
	if report.Available < 0 || report.Reserved < 0 || report.Confirmed < 0 {
		findings = append(findings, fmt.Sprintf("negative counter: available %d reserved %d confirmed %d",
			report.Available, report.Reserved, report.Confirmed))
	}
	if report.SaleLimit != spec.SaleLimit {
		findings = append(findings, fmt.Sprintf("sale_limit %d, defined as %d", report.SaleLimit, spec.SaleLimit))
	}
	if report.Reserved+report.Confirmed > spec.SaleLimit {
		findings = append(findings, fmt.Sprintf("reserved %d + confirmed %d exceed sale_limit %d",
			report.Reserved, report.Confirmed, spec.SaleLimit))
	}
	return findings
}

// summarizeAudits adds up the SKUs' audits.
func summarizeAudits(skus []SKUSpec, audits []skuAudit) *AuditSummary {
	summary := &AuditSummary{OK: true, Violations: []string{}, Counts: map[string]int64{}}
	for i, audit := range audits {
		prefix := skus[i].SKUID + ": "
		if audit.err != nil {
			summary.OK = false
			summary.SKUsFailed++
			if summary.Error == "" {
				summary.Error = audit.err.Error()
			}
			continue
		}
		summary.SKUsAudited++
		summary.SaleLimit += audit.report.SaleLimit
		summary.Available += audit.report.Available
		summary.Reserved += audit.report.Reserved
		summary.Confirmed += audit.report.Confirmed
		for state, count := range audit.report.StateCounts() {
			summary.Counts[state] += count
		}
		findings := checkAudit(skus[i], audit.report)
		if len(findings) > 0 {
			summary.OK = false
			summary.SKUsFailed++
		}
		for _, finding := range findings {
			if len(summary.Violations) < maxAuditFindings {
				summary.Violations = append(summary.Violations, prefix+finding)
			}
		}
	}
	return summary
}

// undersold counts units left available on SKUs that refused someone as
// SOLD_OUT. Without an audit it falls back on the client's count.
func undersold(skus []SKUSpec, audits []skuAudit, tally *Tally, acceptedBySKU []int64) int64 {
	var total int64
	for i, spec := range skus {
		if tally.SoldOut(i) == 0 {
			continue
		}
		left := int64(0)
		if i < len(audits) && audits[i].err == nil {
			left = audits[i].report.Available
		} else if i < len(acceptedBySKU) {
			left = spec.SaleLimit - acceptedBySKU[i]
		}
		if left > 0 {
			total += left
		}
	}
	return total
}
