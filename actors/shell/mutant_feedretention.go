//go:build mutant_feedretention

package shell

// mutantFeedRetention plants a bug for the simulator to find (make
// sim-mutants): truncation ignores the feed retention and cuts all the
// snapshots allow. Only a build with the tag mutant_feedretention has it.
const mutantFeedRetention = true
