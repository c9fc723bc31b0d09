//go:build mutant_ha_ackbeforestandby

package replica

// mutantHAAckBeforeStandby plants a bug for the simulator to find (make sim-mutants): a primary acknowledges once its own log holds a record, before its waited standbys acknowledge it (Standbys.Commit ignores them).
// Only a build with the tag mutant_ha_ackbeforestandby has it.
const mutantHAAckBeforeStandby = true
