//go:build mutant_healfsync

package core

// mutantHealFsync plants a bug for the simulator to find (make
// sim-mutants): recovering in place from the page cache after a failed
// fsync, as after any other log failure. Only a build with the tag
// mutant_healfsync has it.
const mutantHealFsync = true
