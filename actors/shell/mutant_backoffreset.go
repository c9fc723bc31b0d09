//go:build mutant_backoffreset

package shell

// mutantBackoffReset plants a bug for the simulator to find (make
// sim-mutants): the shell tells the core the log is durable up to its
// last appended record, so the backoff after a failure ends before a
// record appended after the recovery is durable, and a disk that keeps
// failing is recovered from every LogFailureRetry instead of ever less
// often. Only a build with the tag mutant_backoffreset has it.
const mutantBackoffReset = true
