//go:build mutant_ignorecommitlatency

package admission

// mutantIgnoreCommitLatency plants a bug for the simulator to find (make sim-mutants): admission judges the wait by the inbox alone, blind to a slow disk.
// Only a build with the tag mutant_ignorecommitlatency has it.
const mutantIgnoreCommitLatency = true
