//go:build mutant_ha_basecopynosnapshot

package stream

// mutantHABaseCopyNoSnapshot plants a bug for the simulator to find (make sim-mutants): a base copy starts the standby's log after its snapshot without installing the snapshot (FinishBase), so the records it covers are held nowhere on the standby.
// Only a build with the tag mutant_ha_basecopynosnapshot has it.
const mutantHABaseCopyNoSnapshot = true
