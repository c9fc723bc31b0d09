//go:build mutant_ha_promotenotsync

package replica

// mutantHAPromoteNotSync plants a bug for the simulator to find (make sim-mutants): a replica that the sync key does not name may take the free leader key (MayLead).
// Only a build with the tag mutant_ha_promotenotsync has it.
const mutantHAPromoteNotSync = true
