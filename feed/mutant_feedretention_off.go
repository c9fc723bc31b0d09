//go:build !mutant_feedretention

package feed

// mutantRetention is false in every real build: see mutant_feedretention.go.
const mutantRetention = false
