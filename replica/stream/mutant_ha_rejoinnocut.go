//go:build mutant_ha_rejoinnocut

package stream

// mutantHARejoinNoCut plants a bug for the simulator to find (make sim-mutants): a rejoining standby resumes after its own last record instead of cutting the tail the primary does not hold (PlanBegin).
// Only a build with the tag mutant_ha_rejoinnocut has it.
const mutantHARejoinNoCut = true
