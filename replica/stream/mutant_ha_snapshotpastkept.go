//go:build mutant_ha_snapshotpastkept

package stream

// mutantHASnapshotPastKept plants a bug for the simulator to find (make sim-mutants): a standby that installs a new snapshot of its primary's truncates its copy up to the newest snapshot (KeepSnapshots), past the oldest it keeps, which then can no longer begin a recovery.
// Only a build with the tag mutant_ha_snapshotpastkept has it.
const mutantHASnapshotPastKept = true
