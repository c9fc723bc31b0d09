//go:build mutant_ackbeforefsync

package wal

// mutantAckBeforeFsync plants a bug for the simulator to find (make sim-mutants): acknowledging before fsync (commit skips the fsync; the next batch's fsync covers it).
// Only a build with the tag mutant_ackbeforefsync has it.
const mutantAckBeforeFsync = true
