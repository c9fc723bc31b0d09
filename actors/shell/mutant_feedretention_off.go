//go:build !mutant_feedretention

package shell

// mutantFeedRetention is false in every real build: see mutant_feedretention.go.
const mutantFeedRetention = false
