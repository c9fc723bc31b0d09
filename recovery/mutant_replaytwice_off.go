//go:build !mutant_replaytwice

package recovery

// mutantReplayTwice is false in every real build: see mutant_replaytwice.go.
const mutantReplayTwice = false
