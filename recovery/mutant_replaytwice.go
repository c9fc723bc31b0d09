//go:build mutant_replaytwice

package recovery

// mutantReplayTwice plants a bug for the simulator to find (make sim-mutants): applying a record twice on replay (the replay after a snapshot starts at its index, not after it).
// Only a build with the tag mutant_replaytwice has it.
const mutantReplayTwice = true
