//go:build mutant_probeskip

package purchase

// mutantProbeSkip plants a bug for the simulator to find (make
// sim-mutants, campaign mode): an Attempt takes look-ups that were never
// answered for answered, so a lost reserve still on its way to the disk
// no longer holds its user, who may then buy on another SKU. Only a
// build with the tag mutant_probeskip has it.
const mutantProbeSkip = true
