//go:build mutant_retryfsync

package wal

// mutantRetryFsync plants a bug for the simulator to find (make sim-mutants): retrying a failed fsync and acknowledging when the retry succeeds.
// Only a build with the tag mutant_retryfsync has it.
const mutantRetryFsync = true
