package lottery

import "time"

// Stamp renders a Unix time in milliseconds as RFC 3339 in UTC with
// milliseconds ("2026-12-01T19:30:00.000Z"), the form seckill's answers use
// for times, for the details of refusals and of the auditor's report.
func Stamp(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}
