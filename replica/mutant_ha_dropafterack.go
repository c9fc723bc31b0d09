//go:build mutant_ha_dropafterack

package replica

// mutantHADropAfterAck plants a bug for the simulator to find (make sim-mutants): a primary stops waiting for a standby (ActWait) as soon as it decides to drop it, before the coordinator took the smaller sync set (Node.tickPrimary).
// Only a build with the tag mutant_ha_dropafterack has it.
const mutantHADropAfterAck = true
