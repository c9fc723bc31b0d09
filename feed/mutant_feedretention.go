//go:build mutant_feedretention

package feed

// mutantRetention plants a bug for the simulator to find (make
// sim-mutants): Retention.Cut ignores the retention and cuts all the
// snapshots allow. Only a build with the tag mutant_feedretention has it.
const mutantRetention = true
