//go:build mutant_ha_acceptlowerepoch

package stream

// mutantHAAcceptLowerEpoch plants a bug for the simulator to find (make sim-mutants): a standby takes a message of a lower epoch than it has seen (StaleEpoch is never true).
// Only a build with the tag mutant_ha_acceptlowerepoch has it.
const mutantHAAcceptLowerEpoch = true
