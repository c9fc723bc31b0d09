//go:build !mutant_ignorecommitlatency

package admission

// mutantIgnoreCommitLatency is false in every real build: see mutant_ignorecommitlatency.go.
const mutantIgnoreCommitLatency = false
